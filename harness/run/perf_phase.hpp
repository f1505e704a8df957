// The perf phase of a run: after every case x kernel has been checked for correctness
// and memory, the ones that ran cleanly are timed together through their backends (the
// in-process ones randomly interleaved in one isolated child), judged against the perf
// baselines of this machine class with the run-wide multiple-comparison correction, and
// priced. Its steps, in order: time, decide, reproduce, correct, emit (perf_phase.cpp).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"
#include "run/workloads.hpp"
#include "store/store.hpp"

namespace attngate {

/// What the perf phase measures: time (google/benchmark samples, the noise-aware rule) or
/// one call's instructions under callgrind (a plain threshold; check "instructions").
enum class PerfMetric { Time, Instructions };

/// What the user chose for the perf phase (run --perf-metric, --no-calibration, --strict,
/// --workload-kernel, --plugin): parsed once at the CLI's edge, it flows as it is through
/// RunOptions into PerfPhaseOptions.
struct PerfChoices {
    PerfMetric metric = PerfMetric::Time;
    /// Gate time relative to the calibration workload timed with the cases (baselines
    /// that have its samples); false: absolute time, as baselines before calibration.
    bool calibrate = true;
    bool strict = false;          ///< a case the perf rule cannot gate fails (see perf_check)
    std::string workload_kernel;  ///< the kernel label every workload projects; empty: each workload's own
    std::vector<std::string> plugins;  ///< the run's --plugin paths: the counting child loads them too
};

/// The perf phase's progress (done of total repetitions, what is timed), called in the
/// run's process, its timing child's steps included.
using TimingProgressFn = std::function<void(size_t done, size_t total, const std::string &what)>;

struct PerfPhaseOptions {
    PerfChoices choices;  ///< the run's, with strict also set by the suite's perf.require_verdict
    bool isolation = true;
    double timeout_s = 3600.0;  ///< for the whole timing child
    std::string machine_class;
    Store *store = nullptr;  ///< perf and compile baselines, pricing, workloads (required)
    const CostInputs *cost = nullptr;  ///< what the cost check prices with; null: no cost check
    /// Where a slower kernel's profiler trace goes (its host's, when it has one); the perf
    /// check links it relative to the results file. Empty: no traces.
    std::filesystem::path profiles_dir;
    /// The timing's progress: repetitions timed of the total, and what is being timed; called
    /// with 0 before a set starts and with the total when it is done.
    TimingProgressFn on_timing;
};

/// Each case's inputs, generated once by the run and kept for the perf phase.
using PerfInputs = std::map<std::string, std::shared_ptr<const CaseInputs>>;

/// Appends perf (and cost) checks to `results` (in plan order) and fills results.workloads.
Result<void> run_perf_phase(const Suite &suite, const Plan &plan, Backends &backends, const PerfInputs &inputs,
                            RunResults &results, const PerfPhaseOptions &options);

}  // namespace attngate
