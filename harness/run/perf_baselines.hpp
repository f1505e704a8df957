// The perf baselines a perf phase compares against: this machine class's file, or the
// fact that only another class has one, and what each case x kernel is compared with.
#pragma once

#include <optional>
#include <string>

#include "backend/backend.hpp"
#include "checks/perf_check.hpp"
#include "plan/suite.hpp"
#include "store/baseline_store.hpp"

namespace attngate {

class PerfBaselines {
public:
    /// The suite's perf baselines for `machine_class` from the store.
    static Result<PerfBaselines> load(Store &store, const Suite &suite, const std::string &machine_class);

    /// The baseline of a case x kernel, nullptr without one.
    const PerfBaseline *find(const std::string &case_id, const std::string &kernel) const;
    /// Its samples (empty without any): what a decision compares against.
    const Seconds &samples(const std::string &case_id, const std::string &kernel) const;
    /// Whether the case x kernel has samples to compare, or why not.
    PerfBaselineState state(const std::string &case_id, const std::string &kernel) const;
    /// Why a case x kernel without samples was not compared, for its perf check.
    std::string missing_note(const std::string &case_id, const std::string &kernel) const;

    /// Both sides' calibration samples of a case x kernel timed as `outcome`, and whether
    /// it is gated on calibrated times, or why not when the baseline cannot be. The
    /// baseline's samples are kept whenever they are of this build's workload, gated or
    /// not (`wanted` false: --no-calibration): the machine-speed guard reads them.
    PerfCalibration calibration(const std::string &case_id, const std::string &kernel, const TimingOutcome &outcome,
                                bool wanted) const;

private:
    std::optional<BaselineFile> file_;  ///< this machine class's
    std::string machine_class_;
    /// A machine class that has a perf baseline of this suite when this one has none.
    std::optional<std::string> other_machine_;
    /// The kernel threads a baseline without "threads" was timed on (the suite's `threads`),
    /// and those this run times on: a baseline of other threads is not compared.
    int64_t untold_threads_ = 0, timing_threads_ = 0;
    bool other_threads(const PerfBaseline &b) const { return b.threads.value_or(untold_threads_) != timing_threads_; }
};

}  // namespace attngate
