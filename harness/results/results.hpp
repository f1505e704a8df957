// The results model: what a run found, per case x kernel x check. results.json is its
// serialised form and the single source for every reporter.
#pragma once

#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "io/error.hpp"
#include "io/json_describe.hpp"
#include "io/json_io.hpp"
#include "results/check_metrics.hpp"

namespace attngate {

/// 2 added the "error" verdict; version 1 files are still read (see results_from_json).
inline constexpr int kResultsSchemaVersion = 2;

/// Fail is drift (the kernel ran and its answer or cost moved); Error is a kernel that did
/// not run to an answer (a crash, a hang, an error it returned). Both fail the gate (exit
/// 1), and every report keeps them apart, as JUnit's <failure> and <error> do.
enum class Verdict { Pass, Fail, Skip, Error };
constexpr auto enum_names(Verdict) {
    using enum Verdict;
    return std::array{std::pair{Pass, "pass"}, std::pair{Fail, "fail"}, std::pair{Skip, "skip"}, std::pair{Error, "error"}};
}
const char *verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view s);

/// True for the verdicts that fail the gate (Fail and Error).
inline bool is_failing(Verdict v) { return v == Verdict::Fail || v == Verdict::Error; }

/// Each check's numbers; the alternative held is the check (CheckName's order).
using CheckMetrics = std::variant<GoldenMetrics, NumericsMetrics, ContractMetrics, MemoryMetrics, PerfMetrics, CompileMetrics,
                                  CostMetrics, InstructionsMetrics, ProgramMetrics>;

/// Empty metrics of the check's kind.
CheckMetrics empty_metrics(CheckName check);

/// One check's verdict on one case x kernel, with the check's own typed numbers.
struct CheckResult {
    CheckMetrics metrics;
    Verdict verdict = Verdict::Pass;
    std::string reason;  ///< one line a person reads
    std::vector<std::string> notes;  ///< information, never a failure
    std::optional<CrashRecord> crash;  ///< how the kernel's host ended, when it crashed or hung
    /// Metrics a results file holds that no field of the check's record names: kept as
    /// read and written back (the open map, as google/benchmark's user counters).
    json::object extras;

    explicit CheckResult(CheckName check, Verdict v = Verdict::Pass, std::string why = "")
        : metrics(empty_metrics(check)), verdict(v), reason(std::move(why)) {}
    template <class M>
        requires requires { M::kCheck; }
    explicit CheckResult(M m, Verdict v = Verdict::Pass, std::string why = "")
        : metrics(std::move(m)), verdict(v), reason(std::move(why)) {}

    CheckName check() const { return static_cast<CheckName>(metrics.index()); }
    const char *name() const { return enum_name(check()); }
    /// The metrics when this is M's check, else nullptr.
    template <class M>
    const M *get() const { return std::get_if<M>(&metrics); }
    template <class M>
    M *get() { return std::get_if<M>(&metrics); }
    /// The metrics of M's check, which this must be.
    template <class M>
    M &as() {
        ATTNGATE_CHECK(std::holds_alternative<M>(metrics));
        return std::get<M>(metrics);
    }
    template <class M>
    const M &as() const {
        ATTNGATE_CHECK(std::holds_alternative<M>(metrics));
        return std::get<M>(metrics);
    }
};

struct CaseResult {
    std::string case_id;
    std::string kernel;  ///< the suite's label, e.g. flash[bq=64,bk=32]
    std::string kernel_version;
    std::string kernel_origin;  ///< "built-in", a plugin's path or an adapter's URL
    json::object params;  ///< the case's shape and switches, for reports
    std::vector<CheckResult> checks;
    std::string output_sha256;
    double seconds = 0.0;
    std::optional<double> compile_s;  ///< first call's trace + compile time, when the host reports one

    /// Error if any check errored, else Fail if any check failed, Skip if every check
    /// skipped, else Pass.
    Verdict verdict() const;
    /// The first erroring or failing check's reason (prefixed with the check), or the first reason.
    std::string reason() const;
};

/// The cost gate's projection of one workload profile over a run (results.workloads).
struct WorkloadResult {
    std::optional<std::string> workload, file, kernel;  ///< kernel: the one projected
    std::optional<double> budget_pct, restart_interval_hours;
    std::optional<std::string> device_class, currency;
    std::optional<double> price_per_hour;
    std::optional<std::string> price_source, price_date;
    std::optional<double> monthly_cost, device_hours_per_month;
    std::optional<double> baseline_monthly_cost, change, change_pct;
    std::optional<double> change_pct_ci_low;  ///< at the lower end of each shape's time-ratio CI
    std::optional<double> leak_bytes_per_hour, leak_survival_hours;
    std::optional<Verdict> verdict;  ///< pass, fail or skip
    std::optional<std::string> reason;
    bool failed() const { return verdict == Verdict::Fail; }
};
BOOST_DESCRIBE_STRUCT(WorkloadResult, (),
                      (workload, file, kernel, budget_pct, restart_interval_hours, device_class, currency, price_per_hour, price_source,
                       price_date, monthly_cost, device_hours_per_month, baseline_monthly_cost, change, change_pct, change_pct_ci_low,
                       leak_bytes_per_hour, leak_survival_hours, verdict, reason))

struct RunResults {
    int schema_version = kResultsSchemaVersion;
    std::string tool_version;
    std::string suite;
    std::string suite_file;
    std::string started_at;  ///< UTC, ISO 8601
    std::vector<CheckName> checks;  ///< which checks ran
    std::vector<CaseResult> results;
    bool complete = false;  ///< false while the run is still going (or crashed)
    json::object fingerprint;           ///< this run's dependency/environment fingerprint
    json::object baseline_fingerprint;  ///< the one the baselines were made with; empty when unknown
    std::vector<WorkloadResult> workloads;  ///< cost projections per workload profile, when the cost check ran
    std::string machine_class;          ///< the class perf baselines and history are kept per; empty when unknown
    std::string numerics_class;         ///< the class numerics baselines are kept per: the kernels' path and compiler; empty when unknown
    json::object shard;                 ///< for one shard of a sharded run: which, and the whole plan (see merge.hpp)
    json::object ab;                    ///< for an A/B run: the sides' command lines ("a", "b"), not part of any fingerprint
    std::string host_name;              ///< the machine that ran it; empty when unknown
    /// Kernel sources that did not load ("<backend>: <source>: <why>"): the run fails, before
    /// any kernel runs, since what they serve is missing and a run of the rest could pass.
    std::vector<std::string> load_errors;

    /// Fail when the run did not complete, a kernel source did not load, any case x kernel
    /// failed or errored, or a workload failed; else Pass.
    Verdict verdict() const;
    const CaseResult *find(std::string_view case_id, std::string_view kernel) const;
};

/// The first check of case x kernel `r` whose metrics are M's, or nullptr.
template <class M>
const M *find_metrics(const CaseResult &r) {
    for (const auto &c : r.checks)
        if (const M *m = c.get<M>()) return m;
    return nullptr;
}

/// A numeric metric of a check as a double (an integer one converted), when the check is
/// the field's record's and the figure was measured and is finite; e.g.
/// figure_of<&GoldenMetrics::margin>(check).
template <auto Field>
std::optional<double> figure_of(const CheckResult &c) {
    const auto *m = c.get<record_of_t<Field>>();
    if (!m || !(m->*Field)) return std::nullopt;
    const double x = static_cast<double>(*(m->*Field));
    return std::isfinite(x) ? std::optional(x) : std::nullopt;
}

/// A check's metrics (and crash, and extras) as results.json holds them: for reports that
/// list every metric without knowing the check.
json::object metrics_json(const CheckResult &c);

/// Why a perf row was not gated ("too noisy", "machine speed moved", ...), or "" when it was
/// judged against a baseline: the verdict line's counts and the cost row that follows it.
std::string perf_not_gated_because(const CheckResult &k);

json::value to_json(const RunResults &r);
Result<RunResults> results_from_json(const json::value &v, const std::string &file);
Result<RunResults> load_results(const std::filesystem::path &path);
Result<void> save_results(const RunResults &r, const std::filesystem::path &path);
/// What an --out about to be replaced holds: nothing (no file, or an empty one), or the results
/// of an earlier run; anything else (a suite, a baseline, a file of the user's) is an error
/// naming it, so that no results write replaces it.
Result<std::optional<RunResults>> replaceable_results(const std::filesystem::path &out);

}  // namespace attngate
