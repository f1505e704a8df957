// The one interface every kernel is reached through. A backend hosts kernels (in this
// process, or behind an adapter over HTTP), runs one on a case, times a set of them and
// observes their memory; what it hands back is plain observation data for the checks.
// A new kind of kernel host is one new implementation of this interface.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "io/error.hpp"
#include "plan/inputs.hpp"
#include "plan/kernel_info.hpp"
#include "plan/suite.hpp"
#include "backend/observation.hpp"

namespace attngate {

/// One kernel on one case: what every backend call is about. The inputs are generated
/// once per case by the caller and shared by every kernel and backend.
struct Invocation {
    const Suite *suite = nullptr;
    const CaseSpec *spec = nullptr;
    const CaseInputs *inputs = nullptr;
    const KernelSpec *kernel = nullptr;  ///< registered name and tiling hints
};

struct ObserveRequest {
    bool memory = false;
    int64_t warmup_calls = 2;   ///< calls before the measured memory series
    int64_t memory_calls = 20;  ///< measured calls (N)
    int64_t memory_budget_bytes = int64_t{1} << 30;  ///< skip the growth probe past this
    bool isolation = true;      ///< in-process: run in a forked child
    double timeout_s = 60.0;    ///< per observation
    /// The conformance check: run even where the host would decline the case on the
    /// kernel's behalf for what it declares (an adapter's fully-masked-row or masked-NaN
    /// guards), so that the declaration itself is checked; a refusal of the kernel's own
    /// comes back as Observation::unsupported.
    bool conformance = false;
    /// Also lower the kernel for the TPU (a host that cannot leaves Observation::program empty).
    bool program = false;
};

struct TimingRequest {
    int repetitions = 15;
    double min_time_s = 0.02;
    bool isolation = true;
    double timeout_s = 3600.0;  ///< for the whole set
    /// Also time the calibration workload (calibration.hpp), on one thread and on the
    /// suite's threads at once, interleaved with the set.
    bool calibrate = false;
    /// Instead of timing, count each invocation's instructions of one call on one thread
    /// (instruction_count.hpp; the process must be under callgrind).
    bool count_instructions = false;
    /// Calls per repetition of each invocation, in order (0 or absent: as many as
    /// min_time_s takes). A remote host may ignore it.
    std::vector<int64_t> iterations{};
    /// The set's progress: repetitions timed of invs.size() x repetitions, called in the
    /// caller's process. An in-process host calls it as each repetition is timed (its timing
    /// child's steps come back over a pipe), a remote one after each invocation timed.
    std::function<void(size_t done, size_t total)> on_progress{};
};

/// One invocation's timing: samples, or why there are none.
struct TimingOutcome {
    std::vector<double> samples_s;  ///< seconds per call, one per repetition
    /// The process's CPU seconds per call (all its threads), one per repetition; empty when
    /// the host does not measure it (a remote adapter).
    std::vector<double> cpu_samples_s;
    std::optional<double> compile_s;
    std::string error;  ///< non-empty: not timed, and why
    /// The calibration workload's seconds per call, one per repetition, timed in the same
    /// process interleaved with this set (the same for every outcome of one set); empty
    /// when not asked for or when the host cannot run it (a remote adapter).
    std::vector<double> calibration_s;
    /// The same workload on the suite's threads at once (ParallelCalibration), likewise.
    std::vector<double> parallel_calibration_s;
    std::optional<double> instructions;  ///< of one call, when counting was asked for
};

class Backend {
public:
    virtual ~Backend() = default;

    /// "in-process" or "adapter http://127.0.0.1:41234".
    virtual std::string name() const = 0;
    virtual const std::vector<KernelInfo> &kernels() const = 0;
    /// Why the kernel cannot run the case (beyond its feature bits), or empty. A host that
    /// must ask elsewhere (an adapter) gives up after timeout_s, the case's time limit, and
    /// answers empty when it got no answer: observe() of the invocation then says why (an error).
    virtual std::string unsupported(const Invocation &inv, double timeout_s) = 0;
    /// Runs the kernel once for its output and, when asked, observes its memory over
    /// repeated calls. A crash, hang or lost host is data in the observation.
    virtual Observation observe(const Invocation &inv, const ObserveRequest &req) = 0;
    /// Times the invocations, interleaved where the backend can; one outcome each.
    virtual std::vector<TimingOutcome> time(const std::vector<Invocation> &invs, const TimingRequest &req) = 0;
    /// What this backend adds to the run's fingerprint (an adapter's versions), keyed by
    /// where it goes: {"adapters": {"attngate-jax": {...}}}; empty for none.
    virtual boost::json::object fingerprint() const = 0;
    /// The case is done: drop what was kept for it (uploaded inputs).
    virtual void release_case(const CaseSpec &) {}
    /// Kernel sources the host could not load ("--kernels pkg.mod:make: cannot import ..."),
    /// while it serves its other kernels.
    virtual std::vector<std::string> load_errors() const { return {}; }
    /// A profiler trace of a few warm calls, saved as a file under `dir`, for a report to
    /// link when the kernel got slower; an error when the host has no profiler.
    virtual Result<std::filesystem::path> profile(const Invocation &, const std::filesystem::path &) {
        return fail(ErrorKind::Usage, "{} has no profiler to attach", name());
    }
};

/// Every backend of a run, and which one hosts each kernel.
class Backends {
public:
    /// Fails when a kernel name is offered twice.
    Result<void> add(std::unique_ptr<Backend> backend);
    Backend *host_of(std::string_view kernel) const;
    const KernelInfo *find(std::string_view kernel) const;
    std::vector<const KernelInfo *> kernels() const;
    const std::vector<std::unique_ptr<Backend>> &all() const { return backends_; }
    /// Every backend's fingerprint contribution merged into one object.
    boost::json::object fingerprint() const;
    /// Every backend's load errors, each prefixed with the backend's name.
    std::vector<std::string> load_errors() const;

private:
    std::vector<std::unique_ptr<Backend>> backends_;
};

}  // namespace attngate
