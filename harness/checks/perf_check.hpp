// The perf check: a case x kernel's timing samples against its baseline samples, judged
// by the perf decision rule (perf_decision.hpp), with throughput figures.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stats/perf_decision.hpp"
#include "results/results.hpp"
#include "checks/throughput.hpp"

namespace attngate {

/// Whether there are baseline samples to compare, and why not when there are none: no
/// baseline for this case x kernel on this machine class, or one only on another class.
enum class PerfBaselineState { Present, Missing, OtherMachine };

/// Throughput metrics of a sample set: samples, median, MAD, tokens/s, GFLOP/s.
PerfMetrics timing_metrics(const std::vector<double> &samples_s, const AttentionShape &shape, double flops);

/// What a perf check judges: a case x kernel's samples, its baseline's, the decision
/// between them and the figures its throughput is computed from. A new input is a member
/// here, set where the perf phase or `ab` builds it.
struct PerfCheckInput {
    std::vector<double> samples_s;           ///< this run's, seconds per call
    std::vector<double> baseline_samples_s;  ///< empty when not compared
    const PerfDecision *decision = nullptr;  ///< after the run-wide Benjamini-Hochberg pass; null: not compared
    PerfBaselineState baseline = PerfBaselineState::Present;
    std::string baseline_note{};  ///< why not compared: names the other machine class, or says no baseline exists
    AttentionShape shape;
    double flops = 0.0;
    double threshold_pct = 5.0;
    std::string machine_class;
    /// A case the rule cannot gate fails instead of skipping (dedicated runners: --strict,
    /// suite perf.require_verdict).
    bool strict = false;
    /// Paired A/B (side A timed in the same run): faster beyond the threshold is an improvement,
    /// not a stale baseline.
    bool paired = false;
    /// The kernel threads it was timed on (the suite's timing_threads()); unset: not said.
    std::optional<int> threads{};
};

/// The check from a decision. A case the rule cannot gate (too noisy, too few
/// repetitions, no baseline) is a skip, or with `strict` a failure.
CheckResult perf_check(const PerfCheckInput &in);

/// The calibration workload's samples of the run and of the baseline (empty where there
/// are none), and whether the decision was made on times relative to them.
struct PerfCalibration {
    std::vector<double> samples_s, baseline_samples_s;
    /// The workload on the suite's threads at once, now and in the baseline (the guard's
    /// second sensor; never divided by).
    std::vector<double> parallel_samples_s, baseline_parallel_samples_s;
    std::string workload;  ///< the workload's name (calibration.hpp), recorded with the samples
    bool gated = false;    ///< the decision compared calibrated times (mode "calibrated")
    std::string note;      ///< why it was not, when it could not be
    /// The machine's change of speed by both sensors, median now / median in the baseline
    /// (NaN without both): what guard_machine_speed reads.
    MachineMove machine_move() const;
};

/// Records calibration on a perf check: its samples (kept for the next baseline and for
/// reports), mode "calibrated" or "absolute", and when both sides have samples the
/// machine's change of speed (calibration_ratio, > 1: the machine is slower now;
/// parallel_calibration_ratio, on the suite's threads) and the absolute time ratio
/// (absolute_ratio) beside the calibrated `ratio` the gate used.
void add_calibration(CheckResult &check, const PerfCalibration &calibration);

/// Records a window decision's inputs on a perf check (after add_calibration): mode
/// "window", the runs in the row's window, their spread, the run-wide shift taken out
/// (log, recorded as a ratio), this run's fastest repetition, and the window's mean time in
/// this run's seconds (window_fastest_s). A regression's reason says that its time stays out
/// of the window until accepted.
void add_window(CheckResult &check, const std::vector<double> &window, double shift);

/// The median time a cost compares today's median with: for a window, the window's mean at
/// this run's calibration and shift (median_s x window_fastest_s / fastest_s, so the cost moves
/// as the gated ratio does); else the single-run baseline's median. nullopt: none.
std::optional<double> priced_baseline_s(const PerfMetrics &metrics);

/// Which timing of a case x kernel: the first, or a regression's second (require_reproduction).
enum class PerfTiming { First, Reproduction };

/// The two sample sets a perf check's decision compares, from its metrics: samples_s and
/// baseline_samples_s, each relative to its calibration when the check's mode is
/// calibrated. What `merge` redecides on. PerfTiming::Reproduction: the second timing's
/// samples (reproduction_samples_s, reproduction_calibration_s) instead.
std::pair<std::vector<double>, std::vector<double>> samples_to_gate(const PerfMetrics &metrics,
                                                                    PerfTiming timing = PerfTiming::First);

/// The machine's move a perf check recorded, from its calibration samples and the
/// baseline's (NaN where either is absent), of the first timing or of the second: what
/// `merge` guards with.
MachineMove machine_move_of(const PerfMetrics &metrics, PerfTiming timing = PerfTiming::First);

/// Records a regression's second timing on its perf check (reproduction_samples_s, its
/// calibration samples, and the decision on it: reproduction_ratio, _ci_low, _ci_high,
/// _status), so that `merge` can judge the reproduction again. A second timing that
/// failed (`error`: a crash, a hang) is kept as reproduction_error and makes the check
/// an error (keep_reproduction_error).
void add_reproduction(CheckResult &check, const std::vector<double> &samples_s, const PerfCalibration &calibration,
                      const PerfDecision &decision, const std::string &error);

/// A perf check whose second timing failed (reproduction_error) is an error with that
/// reason, whatever its decision says: what add_reproduction does, and `merge` after it
/// redecides.
void keep_reproduction_error(CheckResult &check);

/// Sets a decision's figures, status, reason and verdict on a perf check that compared
/// against a baseline: what perf_check does, and what `merge` redoes after the
/// Benjamini-Hochberg pass over every shard's comparisons.
void apply_perf_decision(CheckResult &check, const PerfDecision &decision);

}  // namespace attngate
