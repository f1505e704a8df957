// The cost check's data and arithmetic: device prices (baselines/pricing.json), workload
// profiles (baselines/workloads/*.json), cost per million tokens, monthly projections and
// their change against a baseline, and how long a leak takes to exhaust memory headroom.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "plan/suite.hpp"
#include "store/store.hpp"

namespace attngate {

/// One device class's list price, with where it came from: reports print these next to
/// every figure derived from the price.
struct DevicePrice {
    std::string device_class;  ///< e.g. "gcp-e2-standard-2", "gcp-tpu-v5e"
    std::string description;
    double price_per_hour = 0.0;  ///< per device (VM, chip or GPU) hour
    std::string currency;         ///< copied from the pricing file
    std::string source;           ///< URL or document name
    std::string as_of;            ///< YYYY-MM-DD the price was read
    std::string note;
};

/// baselines/pricing.json: {"schema_version": 1, "currency": "USD", "devices": [...]}.
struct Pricing {
    std::filesystem::path file;
    int64_t schema_version = 1;
    std::string currency;
    std::vector<DevicePrice> devices;

    /// The device class, or nullptr.
    const DevicePrice *find(std::string_view device_class) const;
};

/// One shape of a workload: a suite case and how often production runs it.
struct WorkloadShape {
    std::string case_id;               ///< a case id of the suite whose timings are used
    double requests_per_second = 0.0;  ///< production request rate
    double calls_per_request = 1.0;    ///< attention calls of this shape per request
    std::string json_path;             ///< "$.shapes[i]", for errors

    /// requests_per_second x calls_per_request.
    double calls_per_second() const { return requests_per_second * calls_per_request; }
};

/// A production workload profile (baselines/workloads/<name>.json).
struct Workload {
    std::filesystem::path file;
    std::string name, description;
    std::string device_class;  ///< the class the case timings are measured on
    std::string kernel = "flash";  ///< the kernel label production runs (default flash)
    std::vector<WorkloadShape> shapes;
    double memory_headroom_bytes = 0.0;   ///< free memory a leak may consume
    double restart_interval_hours = 0.0;  ///< the service restarts at least this often
    double cost_budget_pct = 5.0;         ///< allowed monthly cost rise, percent
};

/// Parses pricing.json / one workload profile; `where` (a path or URL) names it in errors.
Result<Pricing> parse_pricing(std::string_view text, const std::string &where);
Result<Workload> parse_workload(std::string_view text, const std::string &where);
/// pricing.json from the store; nullopt when there is none.
Result<std::optional<Pricing>> load_pricing(Store &store);
/// Every workloads/*.json in the store, by name; duplicate workload names are an error.
Result<std::vector<Workload>> load_workloads(Store &store);

/// Checks that the workload's device class is priced and its cases exist in the suite;
/// the error names the workload file and the JSON path.
std::optional<Error> check_workload_refs(const Workload &w, const Pricing &pricing, const Suite &suite);

/// Hours in the projection month: 30 days x 24 h = 720 (a fixed month, so that months
/// compare; cloud bills use 730 h on average, 2.6% more).
inline constexpr double kHoursPerMonth = 720.0;

/// Cost of a million tokens when each call of seconds_per_call produces tokens_per_call
/// tokens on a device billed price_per_hour, the device fully busy:
/// seconds_per_call / 3600 x price_per_hour / tokens_per_call x 1e6.
double cost_per_million_tokens(double seconds_per_call, double tokens_per_call, double price_per_hour);

/// One shape's share of a projection.
struct ShapeProjection {
    std::string case_id;
    double calls_per_second = 0.0;
    double seconds_per_call = 0.0;
    double device_hours_per_month = 0.0;  ///< calls/s x s/call x kHoursPerMonth
    double monthly_cost = 0.0;
};

/// A workload's monthly device time and cost at one device price.
struct WorkloadProjection {
    std::string workload;
    DevicePrice price;  ///< the price used, with its source
    double device_hours_per_month = 0.0;
    double monthly_cost = 0.0;
    std::vector<ShapeProjection> shapes;
};

/// Devices fully busy for calls/s x seconds/call device-seconds each second, summed over
/// the shapes, for kHoursPerMonth hours (no idle capacity or headroom is added: this is
/// the floor a kernel's speed sets on the bill). An error names a shape whose case has no
/// positive finite time in seconds_per_call_by_case (not measured in this run).
Result<WorkloadProjection> project_workload(const Workload &w,
                                            const std::map<std::string, double> &seconds_per_call_by_case,
                                            const DevicePrice &price);

/// Current against baseline projection.
struct CostChange {
    double change = 0.0;      ///< current - baseline monthly cost, in the currency
    double change_pct = 0.0;  ///< 100 x change / baseline; +inf when baseline is 0 and current is not
    bool within_budget = true;  ///< change_pct <= budget_pct
    std::string reason;         ///< one line, with the price and its source
};

CostChange compare_projection(const WorkloadProjection &current, const WorkloadProjection &baseline,
                              double budget_pct);

/// Hours until a leak of leak_bytes_per_call at calls_per_second uses headroom_bytes:
/// headroom / (leak x calls/s) / 3600; +inf when nothing leaks (leak <= 0) or nothing runs.
double leak_survival_hours(double leak_bytes_per_call, double calls_per_second, double headroom_bytes);

/// A workload's leak verdict: survival against the restart interval.
struct LeakVerdict {
    double leak_bytes_per_hour = 0.0;
    double survival_hours = 0.0;  ///< +inf without a leak
    bool survives = true;         ///< survival_hours >= restart_interval_hours
    std::string reason;
};

/// Sums each shape's calls/s x its case's leak per call (negative leaks count as 0) and
/// compares the time to exhaust memory_headroom_bytes with restart_interval_hours. An
/// error names a shape whose case has no measured leak (never treated as "no leak").
Result<LeakVerdict> check_leak(const Workload &w, const std::map<std::string, double> &leak_bytes_per_call_by_case);

}  // namespace attngate
