// The perf gate's decision rule: is the current run of a case slower than its baseline,
// significantly and by more than the practical threshold? Pure: samples and a policy in,
// a decision out; the run-wide Benjamini-Hochberg pass is a second step.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "stats/stats.hpp"

namespace attngate {

/// What the gate applies to one case x kernel; settable per suite and per case.
struct DecisionPolicy {
    double alpha = 0.01;       ///< significance level, after Benjamini-Hochberg
    double threshold = 0.05;   ///< practical threshold on the median-time ratio (5%)
    int min_reps = 9;          ///< fewest samples per side (see min_repetitions_for_alpha)
    int bootstrap_resamples = 2000;
    double ci_level = 0.95;    ///< of the bootstrap CI; lower per look when a run looks several times
    uint64_t seed = kDefaultBootstrapSeed;
};

enum class PerfStatus {
    Ok,            ///< no regression shown (including "not significant after correction")
    Regression,    ///< significantly slower, CI beyond the threshold: fails the gate
    Improvement,   ///< significantly faster beyond the threshold: reported, never failed
    TooNoisy,      ///< inconclusive with too few repetitions for the measured noise: not gated, never a pass
    Insufficient,  ///< fewer than min_reps samples on a side, or unusable samples
};

/// The statuses' names in results files (see io/json_describe.hpp's NamedEnum).
constexpr auto enum_names(PerfStatus) {
    using enum PerfStatus;
    return std::array{std::pair{Ok, "ok"}, std::pair{Regression, "regression"}, std::pair{Improvement, "improvement"},
                      std::pair{TooNoisy, "too_noisy"}, std::pair{Insufficient, "insufficient"}};
}

/// "ok", "regression", "improvement", "too_noisy", "insufficient".
const char *perf_status_name(PerfStatus s);

/// One case x kernel's verdict with the numbers behind it. Ratios are current / baseline
/// median time (> 1: slower). NaN marks a figure that could not be computed.
struct PerfDecision {
    PerfStatus status = PerfStatus::Insufficient;
    double ratio = 0.0;    ///< median(current) / median(baseline), or the median pair ratio
    double ci_low = 0.0;   ///< bootstrap CI of that ratio (95% unless the policy says otherwise)
    double ci_high = 0.0;
    double ci_level = 0.95;  ///< of that CI (the policy's)
    double p_value = 1.0;            ///< one-sided, H1: current is slower (raw)
    double p_adjusted = 1.0;         ///< p_value after Benjamini-Hochberg over the run
    double p_value_faster = 1.0;     ///< one-sided, H1: current is faster (raw)
    double p_adjusted_faster = 1.0;  ///< p_value_faster after Benjamini-Hochberg
    double relative_noise = 0.0;     ///< max over both sides of scaled MAD / median
    int repetitions = 0;             ///< min(current, baseline) sample count
    int required_repetitions = 0;    ///< per side, to gate an inconclusive result at this noise (see below)
    double threshold = 0.05;         ///< the practical threshold it was judged against
    std::string reason;              ///< one line for people
    bool machine_moved = false;      ///< TooNoisy because the machine's speed moved (guard_machine_speed, require_reproduction)
    /// Judged against a window of past runs (perf_window.hpp): how many runs it held (0: not
    /// a window decision); repetitions and required_repetitions then count runs, and
    /// relative_noise is the between-run spread.
    int window_runs = 0;
    bool collecting = false;  ///< Insufficient because the window holds fewer runs than gating needs
};

/// A kernel's times relative to the machine's speed: each sample divided by the median of
/// the calibration workload's samples timed in the same process. Dividing a side by one
/// constant keeps its ranks and relative noise, so `decide` on two such sides judges
/// the ratio of the two medians after the machine's change of speed is taken out.
/// Empty when either input is empty or the calibration median is not positive.
std::vector<double> relative_to_calibration(const std::vector<double> &samples, const std::vector<double> &calibration);

/// Repetitions per side needed to gate at `threshold` given the relative noise
/// (scaled MAD / median) of the samples:
///
///     n_noise = ceil((z_0.975 * sqrt(pi / 2) * sqrt(2) * relative_noise / threshold)^2)
///     required = max(min_repetitions_for_alpha(alpha), n_noise)
///
/// sqrt(pi / 2) = 1.2533 is the standard error of a median relative to a mean's
/// (normal data), sqrt(2) combines the two independent sides, z_0.975 = 1.96 is the 95%
/// CI's quantile: n_noise makes the bootstrap CI's half-width on the ratio
/// (1.96 * 1.2533 * sqrt(2) * relative_noise / sqrt(n)) smaller than the threshold.
/// Noise equal to the threshold needs 13 repetitions; twice the threshold needs 49.
int required_repetitions(double alpha, double relative_noise, double threshold);

/// Independent samples (seconds per call) of the current run and the baseline:
/// 1. a side with < policy.min_reps samples, or a non-finite or non-positive time:
///    Insufficient;
/// 2. p (one-sided Mann-Whitney, H1 slower) <= alpha and ci_low > 1 + threshold:
///    Regression; mirrored (H1 faster, ci_high < 1 - threshold): Improvement; else Ok;
/// 3. an Ok (inconclusive) result with fewer repetitions (either side) than
///    max(min_reps, required_repetitions(alpha, noise, threshold)), noise being the larger
///    relative MAD of the two sides: TooNoisy, never a silent pass. At the minimum 9
///    repetitions the CI cannot resolve the threshold once the noise exceeds about
///    0.87 x threshold; more repetitions make such a case gateable again. A conclusive
///    Regression or Improvement is never downgraded: its CI cleared the threshold and its
///    test reached alpha with the noise it has.
/// p_adjusted starts equal to p_value (one comparison) until apply_benjamini_hochberg.
PerfDecision decide(const std::vector<double> &current, const std::vector<double> &baseline,
                    const DecisionPolicy &policy);

/// Paired A/B samples (current[i] and baseline[i] measured back to back): the same rule
/// with the one-sided Wilcoxon signed-rank test and the bootstrap CI of the median per-pair
/// ratio; sizes must match (else Insufficient).
PerfDecision decide_paired(const std::vector<double> &current, const std::vector<double> &baseline,
                           const DecisionPolicy &policy);

/// The policy for each of `looks` looks at the same growing samples (sequential A/B
/// rounds): Bonferroni over the looks, alpha / looks and a CI at level
/// 1 - (1 - ci_level) / looks, so that the chance that any look flags a row that did not
/// change stays within the single-look figures. looks <= 1: the policy unchanged.
DecisionPolicy per_look(DecisionPolicy policy, int looks);

/// Whether more repetitions could still change this decision's verdict about a regression
/// (what sequential A/B rounds stop on): TooNoisy, or Ok with a CI that still reaches
/// 1 + threshold and a median ratio past the midpoint, 1 + threshold / 2, i.e. the samples
/// cannot yet tell "within the threshold" from "beyond it" and "beyond" is the likelier.
/// An Ok whose median is at or below the midpoint stops: more pairs would most likely only
/// confirm it (measured on the smoke suite: such rows took half of all pairs and all ended
/// ok), at the price of power against changes just beyond the threshold. A Regression, an
/// Improvement, an Ok whose CI lies below 1 + threshold, and an Insufficient decision
/// (fewer samples than asked for, or unusable ones) want none.
bool wants_more_repetitions(const PerfDecision &d);

/// How the machine's speed moved since a baseline was recorded, by the calibration
/// workload: its median time now over its median then (> 1: the machine is slower now);
/// NaN (or not positive) where either side has no samples.
struct MachineMove {
    double single = std::numeric_limits<double>::quiet_NaN();    ///< on one thread: what calibrated times are divided by
    double parallel = std::numeric_limits<double>::quiet_NaN();  ///< on the suite's threads at once, joined
};

/// The machine-speed guard of a comparison against a stored baseline, applied after the
/// Benjamini-Hochberg pass; `calibrated`: the decision compared times relative to the
/// one-thread workload (else absolute ones). A kernel feels a change of the machine's
/// speed neither fully nor not at all, and not like one sensor: measured on a shared VM,
/// the one-thread workload moved 2.2x while the kernels moved 1.33x, and under a
/// competing load two-thread kernels slowed 2.4x while it barely moved (the parallel
/// sensor sees that). So the kernel's true change, the absolute reading over the machine's
/// move, lies anywhere between the absolute reading over the largest move (1 included) and
/// over the smallest. Once either sensor moved by more than the threshold (max(r, 1/r) >
/// 1 + threshold), a verdict stands only when it holds over that whole range: a
/// Regression when the CI's low end still clears 1 + threshold at the lowest reading, an
/// Improvement when the CI's high end is still below 1 - threshold at the highest, an Ok
/// when no reading is higher than this one or the highest's CI stays within 1 + threshold.
/// Anything else becomes TooNoisy with the reason. Unknown moves are left out; with none,
/// for a decision already Insufficient or TooNoisy, or for a calibrated one without its
/// one-thread move, it changes nothing.
void guard_machine_speed(PerfDecision &d, const MachineMove &move, bool calibrated);

/// A regression against a stored baseline must reproduce. `second` is the same case x
/// kernel timed again, in a second timing pass after the first (a fresh child when
/// isolated), and judged against the same baseline by decide (its raw p, no run-wide pass:
/// it re-tests one hypothesis already selected) and guard_machine_speed. A Regression in
/// `first` stands only when `second` is a Regression too; else it becomes TooNoisy, with
/// both readings in the reason. Why: on a shared VM the machine's speed moves between runs
/// by more than the guard's sensors follow (measured: a kernel x1.25 slower than at its
/// baseline while both sensors moved x1.10); a move that passes within seconds is caught
/// by the second timing, one that lasts minutes is not (measured: 6 of 17 false alarms
/// cleared in one series). A real regression is there in every timing. Any other status
/// of `first` is left as it is.
void require_reproduction(PerfDecision &first, const PerfDecision &second);

/// The run-wide pass: Benjamini-Hochberg over the p-values of every decision that has one
/// (both directions separately), sets p_adjusted / p_adjusted_faster, and turns a
/// Regression or Improvement whose adjusted p exceeds alpha into an inconclusive result:
/// Ok ("not significant after correction") when it has the repetitions its noise needs,
/// else TooNoisy.
void apply_benjamini_hochberg(std::vector<PerfDecision> &decisions, double alpha);

}  // namespace attngate
