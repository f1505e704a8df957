// The runner: executes the plan through the backends, applies the checks and produces
// RunResults, writing results.json after every case so that a crash still leaves a
// partial report. It prints nothing; callers watch progress through a callback.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "checks/memory_check.hpp"
#include "plan/plan.hpp"
#include "plan/shard.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"
#include "run/check_requests.hpp"
#include "run/perf_phase.hpp"
#include "store/store.hpp"

namespace attngate {

struct RunOptions {
    Store *store = nullptr;  ///< goldens, baselines, pricing and workloads (required)
    std::filesystem::path results_path = "reports/results.json";
    std::vector<std::string> checks = {"golden"};
    PlanFilter filter;
    /// Origins (plugin paths, adapter URLs) whose kernels join the suite's; each must run
    /// at least one case, or the run is bad input.
    std::vector<std::string> extra_origins;
    bool isolation = true;            ///< each case x kernel in a child process with a time limit
    std::optional<double> timeout_s;  ///< overrides the suite's
    std::string machine;              ///< a user-given name for this machine class (perf baselines)
    std::string device_class = "gcp-e2-standard-2";  ///< the price list entry for this machine's time
    std::vector<std::string> lockfiles;  ///< the user's lock files, recorded in the fingerprint
    PerfChoices perf;  ///< what the perf phase measures and how it gates (handed to it as it is)
    std::optional<ShardSpec> shard;      ///< run only this shard of the plan (see sharding.hpp)
};

/// Called after each case x kernel with its result, how many are done and the total.
using ProgressFn = std::function<void(const CaseResult &, size_t done, size_t total)>;

/// What a run tells as it goes: each case x kernel checked, then the perf phase's timing.
struct RunProgress {
    ProgressFn on_case{};
    TimingProgressFn on_timing{};
    /// Once results_path holds this run (complete: false) in place of the results before it:
    /// what was written from those now describes another run.
    std::function<Result<void>()> on_replaced{};
};

Result<RunResults> run_suite(const Suite &suite, Backends &backends, const RunOptions &options, const RunProgress &progress = {});

/// Asks `req` for the memory series the suite wants of case `c`: its warm-up, its measured
/// calls and the growth probe's budget (what `run` and both sides of `ab` observe).
void ask_memory(ObserveRequest &req, const Suite &suite, const CaseSpec &c);

/// The memory check's limits the suite sets (peak growth, retention).
MemoryPolicy memory_policy(const Suite &suite);

/// The class numerics baselines are kept per: the built-in kernels' path (with
/// ATTNGATE_KERNEL_ISA applied) and the compiler, on which their output bits depend, e.g.
/// "avx2 g++ 12.2.0".
std::string numerics_class();

/// The case's shape and switches as JSON.
json::object case_params(const CaseSpec &c);

/// attngate's own version string.
const char *tool_version();

}  // namespace attngate
