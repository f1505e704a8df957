// The perf windows a perf phase judges against: each case x kernel's fastest repetition in the
// last runs of this suite on this machine class at the suite's timing threads, read from the
// store's history (history.hpp), as log times relative to the calibration workload's fastest
// repetition, with each run's run-wide shift taken out.
// A window starts at the row's latest accepted run ("b", baseline update --checks perf).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/error.hpp"
#include "store/store.hpp"

namespace attngate {

class PerfWindows {
public:
    /// The runs among the last kWindowRuns of `suite` on `machine_class` in the store's history
    /// whose calibration workload is `workload` and whose kernels were timed on `threads`
    /// (a record without "th" predates the fastest repetitions: none is in a window); none
    /// is no window (every row then says so).
    static Result<PerfWindows> load(Store &store, const std::string &suite, const std::string &machine_class,
                                    const std::string &workload, int threads);

    /// A row's window (shift-removed log calibrated times, oldest first); empty without one.
    const std::vector<double> &of(const std::string &case_id, const std::string &kernel) const;
    /// The calibration workload's fastest time, the median over the window's runs (the
    /// machine's speed then); NaN without runs.
    double calibration_s() const { return calibration_s_; }
    size_t runs() const { return runs_; }
    /// The run-wide shift of each of the window's runs that had enough rows to have one
    /// (remove_run_shifts), oldest first: how far this class's runs moved, every row alike.
    const std::vector<double> &run_shifts() const { return run_shifts_; }

private:
    std::map<std::pair<std::string, std::string>, std::vector<double>> rows_;
    std::vector<double> run_shifts_;
    double calibration_s_ = 0.0;
    size_t runs_ = 0;
};

/// One timing of a row in the window's units: log(fastest sample / fastest calibration
/// sample), and the same of its second fastest sample (how far apart its fastest repetitions
/// are: today's in-run interval); NaN when a side is missing or not positive.
struct FastestReading {
    double fastest, second;
};
FastestReading fastest_reading(const std::vector<double> &samples_s, const std::vector<double> &calibration_s);

}  // namespace attngate
