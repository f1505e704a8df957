// The perf phase of a run: after every case x kernel has been checked for correctness
// and memory, the ones that ran cleanly are timed together through their backends (the
// in-process ones randomly interleaved in one isolated child), judged against the perf
// baselines of this machine class with the run-wide multiple-comparison correction, and
// priced.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "checks/cost.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"
#include "store/store.hpp"

namespace attngate {

/// What the cost check prices with, read and checked before the first case runs: a typo
/// in --device-class or a bad pricing or workloads file costs nothing and writes nothing.
struct CostInputs {
    std::optional<Pricing> pricing;  ///< none: the store has no pricing.json and cost checks skip
    std::string no_pricing;          ///< why there is none, for the skipped cost checks
    std::string device_class;        ///< the pricing entry this machine's time is priced as
    std::vector<Workload> workloads;
};

/// Loads pricing and workloads from the store; an unknown device class is a usage error.
Result<CostInputs> load_cost_inputs(Store &store, const std::string &device_class);

/// What the perf phase measures: time (google/benchmark samples, the noise-aware rule) or
/// one call's instructions under callgrind (a plain threshold; check "instructions").
enum class PerfMetric { Time, Instructions };

struct PerfPhaseOptions {
    PerfMetric metric = PerfMetric::Time;
    std::vector<std::string> plugins;  ///< the run's --plugin paths: the counting child loads them too
    bool isolation = true;
    double timeout_s = 3600.0;  ///< for the whole timing child
    std::string machine_class;
    Store *store = nullptr;  ///< perf and compile baselines, pricing, workloads (required)
    const CostInputs *cost = nullptr;  ///< what the cost check prices with; null: no cost check
    /// Where a slower kernel's profiler trace goes (its host's, when it has one); the perf
    /// check links it relative to the results file. Empty: no traces.
    std::filesystem::path profiles_dir;
    /// Gate time relative to the calibration workload timed with the cases (baselines
    /// that have its samples); false: absolute time, as baselines before calibration.
    bool calibrate = true;
    bool strict = false;          ///< a case the perf rule cannot gate fails (see perf_check)
    std::string workload_kernel;  ///< the kernel label every workload projects; empty: each workload's own
};

/// Each case's inputs, generated once by the run and kept for the perf phase.
using PerfInputs = std::map<std::string, std::shared_ptr<const CaseInputs>>;

/// One case x kernel's timing samples.
struct LabelledSamples {
    std::string case_id, kernel;
    std::vector<double> samples_s;
    std::optional<double> instructions;  ///< of one call, when counted instead of timed
};

/// The plan's case x kernels that the suite's perf settings select, with each case's inputs
/// generated once, timed as often as asked: what `attngate time` (and `time --serve`, for
/// every request of an A/B run) times.
class PlanTimer {
public:
    PlanTimer(const Suite &suite, const Plan &plan, Backends &backends);
    size_t size() const { return rows_.size(); }
    /// (case, kernel) of each row, in row order.
    std::vector<std::pair<std::string, std::string>> labels() const;
    /// Times these rows (indices into labels()) without any check; an Infra error names the
    /// first row that did not run to a time.
    Result<std::vector<LabelledSamples>> time(const TimingRequest &timing, const std::vector<size_t> &which);

private:
    struct Row {
        const CaseSpec *spec;
        const PlannedKernel *kernel;
        Invocation inv;
    };
    Backends &backends_;
    std::vector<std::unique_ptr<CaseInputs>> inputs_;
    std::vector<Row> rows_;
};

/// Times the plan's case x kernels that the suite's perf settings select, without any
/// check: what `attngate time` prints for `attngate ab` to pair up.
Result<std::vector<LabelledSamples>> time_plan(const Suite &suite, const Plan &plan, Backends &backends,
                                               const TimingRequest &timing);

/// Runs every planned case x kernel once and writes its output to dir/<n>.npy, with
/// dir/index.json listing case, kernel, file (or error) and compile_s: what `ab` diffs.
Result<void> write_plan_outputs(const Suite &suite, const Plan &plan, Backends &backends, const std::filesystem::path &dir,
                                bool isolation);

/// Projects every workload profile in the store over `results` (its perf medians, the
/// baselines' medians and ci_low from each perf check, the memory check's leak rates):
/// fills results.workloads. A run and a merge of shards both decide this over all cases.
Result<void> add_workloads(RunResults &results, const std::vector<Workload> &workloads, const Pricing &pricing,
                           const std::string &workload_kernel = "", bool strict = false);

/// Appends perf (and cost) checks to `results` (in plan order) and fills results.workloads.
Result<void> run_perf_phase(const Suite &suite, const Plan &plan, Backends &backends, const PerfInputs &inputs,
                            RunResults &results, const PerfPhaseOptions &options);

}  // namespace attngate
