// The window rule: a case x kernel's time today against the spread between its own past
// runs (a window of per-run summaries), after the shift that moved every row of a run alike
// is taken out. Pure: numbers in, a PerfDecision out (docs/perf-gate.md#window-baselines).
#pragma once

#include <vector>

#include "stats/perf_decision.hpp"

namespace attngate {

/// The fewest runs in a row's window before it is gated (chosen from measurement:
/// docs/perf-gate-log.md, "Window baselines").
inline constexpr int kMinWindowRuns = 6;
/// The most recent runs a window keeps.
inline constexpr int kWindowRuns = 20;
/// The fewest rows with windows for the run-wide shift to be taken out: the median of their
/// deviations stands while fewer than half of them moved.
inline constexpr int kMinShiftRows = 4;
/// A run whose calibration workload ran more than this factor faster or slower than in the
/// window's runs is another speed class: its rows are not judged against that window.
inline constexpr double kSpeedClassFactor = 1.5;

/// Today's reading of one row, in the window's units: the log of its fastest repetition
/// relative to the calibration workload's fastest, minus the run's shift; low and high: the
/// interval today's repetitions give it (perf_windows.hpp: the fastest and the second
/// fastest, likewise).
struct WindowReading {
    double value = 0.0, low = 0.0, high = 0.0;
};

/// The runs a window needs, at a between-run spread `spread` (standard deviation of the
/// log values), for its one-sided prediction interval at `alpha` to lie within the
/// threshold: the smallest n >= min_runs with t(1 - alpha, n - 1) * spread * sqrt(1 + 1/n)
/// <= log(1 + threshold); kRunsNoWindowReaches when no n below it does.
inline constexpr int kRunsNoWindowReaches = 1000;
int required_runs(double alpha, double spread, double threshold, int min_runs);

/// The window rule, on log values (ratios are exp of differences):
/// 1. fewer than min_runs runs: Insufficient, "collecting: k of N runs";
/// 2. m, s: the window's mean and standard deviation; the prediction interval's scale is
///    s * sqrt(1 + 1/n) and p (H1 slower) the Student t tail of (value - m) over it, n - 1
///    degrees of freedom (Bencher's t-test threshold);
/// 3. Regression when p <= alpha and the reading's low end is beyond exp(m) * (1 +
///    threshold); Improvement mirrored, by its high end; else Ok;
/// 4. TooNoisy, whatever 3 found, when the window needs more runs than it has at its
///    spread (required_runs): such a window gates nothing; and an Ok is TooNoisy when
///    today's interval is wider than the threshold either side.
/// repetitions and required_repetitions count runs; apply_benjamini_hochberg then corrects
/// the run's p-values as it does for the in-run rule.
PerfDecision decide_window(const WindowReading &today, const std::vector<double> &window, const DecisionPolicy &policy,
                           int min_runs = kMinWindowRuns);

/// The reason for a window decision that is too noisy to gate.
std::string window_too_noisy_reason(const PerfDecision &d);

/// The median of `deviations` (each row's log value today minus its window's mean): the
/// run-wide shift, 0 when fewer than kMinShiftRows rows are given.
double run_shift(std::vector<double> deviations);

/// The part of a run's shift that is taken out of today's rows: all of it while it is
/// within half the threshold (the residue of a machine's speed that the calibration
/// workload did not follow), or while it is within the prediction interval at `alpha` of
/// `past`, the shifts of the window's own runs (at least kMinWindowRuns of them): what this
/// machine class's runs moved by, every row alike, with nothing changed (measured: x0.76 to
/// x1.45 on this kind's Intel Xeon, whose calibration workload ran at two speeds 2x apart).
/// None beyond both: a regression of every row looks the same as a larger shift.
double removable_shift(double shift, double threshold, const std::vector<double> &past = {}, double alpha = 0.01);

/// Takes the run-wide shift out of every run of a set of windows in place:
/// by_row[r][j] is row r's log value in run j (NaN where the row was not timed). Each
/// run's shift is the median over rows of its value minus the row's median over runs
/// (run_shift's rule); returns the shifts, one per run, NaN for a run with fewer than
/// kMinShiftRows rows (nothing is taken out of it).
std::vector<double> remove_run_shifts(std::vector<std::vector<double>> &by_row);

}  // namespace attngate
