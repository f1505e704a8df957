// The perf decision rule: rank test + bootstrap CI + noise-aware repetition count.
#include "stats/perf_decision.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <boost/math/distributions/normal.hpp>
#include <fmt/format.h>

#include "stats/hypothesis.hpp"
#include "stats/perf_window.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

/// ceil((z_0.975 * sqrt(pi/2) * sqrt(2) * noise / threshold)^2): see required_repetitions.
int repetitions_for_noise(double relative_noise, double threshold) {
    if (!(relative_noise > 0.0)) return 1;
    static const double z = boost::math::quantile(boost::math::normal(), 0.975);
    const double k = z * std::sqrt(std::numbers::pi / 2.0) * std::numbers::sqrt2 * relative_noise / threshold;
    return static_cast<int>(std::min(std::ceil(k * k), 1e9));
}

bool usable(const std::vector<double> &v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x) && x > 0.0; });
}

/// Step 1 of the rule: too few samples on a side to test at all. True when final.
bool insufficient(PerfDecision &d, size_t n_current, size_t n_baseline, const DecisionPolicy &policy) {
    const size_t min_reps = static_cast<size_t>(std::max(policy.min_reps, 1));
    if (n_current >= min_reps && n_baseline >= min_reps) return false;
    d.status = PerfStatus::Insufficient;
    d.reason = fmt::format("too few repetitions to gate: {} current, {} baseline; need at least {} per side",
                           n_current, n_baseline, d.required_repetitions);
    return true;
}

/// Step 2: significance and practical size, either direction.
void classify(PerfDecision &d, const DecisionPolicy &policy) {
    const std::string figures = fmt::format("median time x{:.3f} of baseline ({:.3g}% CI {:.3f} to {:.3f})", d.ratio,
                                            100 * d.ci_level, d.ci_low, d.ci_high);
    if (d.p_adjusted <= policy.alpha && d.ci_low > 1.0 + policy.threshold) {
        d.status = PerfStatus::Regression;
        d.reason = fmt::format("regression: {}, p = {:.2g} <= alpha {:g}, beyond the {:g}% threshold", figures,
                               d.p_adjusted, policy.alpha, 100 * policy.threshold);
    } else if (d.p_adjusted_faster <= policy.alpha && d.ci_high < 1.0 - policy.threshold) {
        d.status = PerfStatus::Improvement;
        d.reason = fmt::format("improvement: {}, p = {:.2g} <= alpha {:g}, beyond the {:g}% threshold", figures,
                               d.p_adjusted_faster, policy.alpha, 100 * policy.threshold);
    } else {
        d.status = PerfStatus::Ok;
        d.reason = fmt::format("no regression beyond {:g}%: {}, p = {:.2g}", 100 * policy.threshold, figures,
                               d.p_adjusted);
    }
}

bool conclusive(const PerfDecision &d) { return d.status == PerfStatus::Regression || d.status == PerfStatus::Improvement; }

/// "too noisy to gate: ...", with what the noise needs.
std::string too_noisy_reason(const PerfDecision &d) {
    if (d.window_runs > 0) return window_too_noisy_reason(d);
    return fmt::format("too noisy to gate: relative noise {:.1f}% against a {:.1f}% threshold needs {} repetitions per side, have {} "
                       "(median time x{:.3f} of baseline, {:.3g}% CI {:.3f} to {:.3f}: inconclusive)",
                       100 * d.relative_noise, 100 * d.threshold, d.required_repetitions, d.repetitions, d.ratio, 100 * d.ci_level,
                       d.ci_low, d.ci_high);
}

/// Step 3 of the rule, for a decision that step 2 classified: noise can only make an
/// inconclusive result ungateable. A regression (or improvement) that met both criteria
/// stands whatever the noise, since the CI already cleared the threshold with it.
void unless_conclusive_too_noisy(PerfDecision &d) {
    if (conclusive(d) || d.repetitions >= d.required_repetitions) return;
    d.status = PerfStatus::TooNoisy;
    d.reason = too_noisy_reason(d);
}

PerfDecision unusable(const char *what) {
    PerfDecision d;
    d.ratio = d.ci_low = d.ci_high = d.relative_noise = kNaN;
    d.reason = fmt::format("cannot gate: {}", what);
    return d;
}

}  // namespace

const char *perf_status_name(PerfStatus s) {
    for (const auto &[status, name] : enum_names(PerfStatus{}))
        if (status == s) return name;
    return "insufficient";
}

std::vector<double> relative_to_calibration(const std::vector<double> &samples, const std::vector<double> &calibration) {
    if (samples.empty() || calibration.empty()) return {};
    const double unit = median(calibration);
    if (!(unit > 0.0) || !std::isfinite(unit)) return {};
    std::vector<double> out;
    out.reserve(samples.size());
    for (double x : samples) out.push_back(x / unit);
    return out;
}

int required_repetitions(double alpha, double relative_noise, double threshold) {
    return std::max(min_repetitions_for_alpha(alpha), repetitions_for_noise(relative_noise, threshold));
}

PerfDecision decide(const std::vector<double> &current, const std::vector<double> &baseline,
                    const DecisionPolicy &policy) {
    if (current.empty() || baseline.empty()) return unusable("no samples on a side");
    if (!usable(current) || !usable(baseline)) return unusable("a time is not a positive finite number");
    PerfDecision d;
    d.threshold = policy.threshold;
    d.ratio = median(current) / median(baseline);
    const auto ci = bootstrap_median_ratio_ci(current, baseline, policy.bootstrap_resamples, policy.seed, policy.ci_level);
    d.ci_low = ci.low, d.ci_high = ci.high, d.ci_level = policy.ci_level;
    d.p_value = d.p_adjusted = mann_whitney_greater(current, baseline).p_value;
    d.p_value_faster = d.p_adjusted_faster = mann_whitney_greater(baseline, current).p_value;
    d.relative_noise = std::max(relative_noise(current), relative_noise(baseline));
    d.repetitions = static_cast<int>(std::min(current.size(), baseline.size()));
    d.required_repetitions = std::max(policy.min_reps, required_repetitions(policy.alpha, d.relative_noise, policy.threshold));
    if (insufficient(d, current.size(), baseline.size(), policy)) return d;
    classify(d, policy);
    unless_conclusive_too_noisy(d);
    return d;
}

PerfDecision decide_paired(const std::vector<double> &current, const std::vector<double> &baseline,
                           const DecisionPolicy &policy) {
    if (current.empty() || current.size() != baseline.size()) return unusable("paired samples need equal, non-zero counts");
    if (!usable(current) || !usable(baseline)) return unusable("a time is not a positive finite number");
    std::vector<double> pair_ratios(current.size());
    for (size_t i = 0; i < current.size(); ++i) pair_ratios[i] = current[i] / baseline[i];
    PerfDecision d;
    d.threshold = policy.threshold;
    d.ratio = median(pair_ratios);
    const auto ci = bootstrap_paired_ratio_ci(current, baseline, policy.bootstrap_resamples, policy.seed, policy.ci_level);
    d.ci_low = ci.low, d.ci_high = ci.high, d.ci_level = policy.ci_level;
    d.p_value = d.p_adjusted = wilcoxon_greater(current, baseline).p_value;
    d.p_value_faster = d.p_adjusted_faster = wilcoxon_greater(baseline, current).p_value;
    // The per-pair ratio already combines both sides: express its noise per side so that
    // the sqrt(2) of the two-sample formula is not counted twice.
    d.relative_noise = relative_noise(pair_ratios) / std::numbers::sqrt2;
    d.repetitions = static_cast<int>(current.size());
    d.required_repetitions = std::max({policy.min_reps, min_pairs_for_alpha(policy.alpha),
                                       repetitions_for_noise(d.relative_noise, policy.threshold)});
    if (insufficient(d, current.size(), baseline.size(), policy)) return d;
    classify(d, policy);
    unless_conclusive_too_noisy(d);
    return d;
}

DecisionPolicy per_look(DecisionPolicy policy, int looks) {
    if (looks <= 1) return policy;
    policy.alpha /= looks;
    policy.ci_level = 1.0 - (1.0 - policy.ci_level) / looks;
    return policy;
}

bool wants_more_repetitions(const PerfDecision &d) {
    switch (d.status) {
    case PerfStatus::TooNoisy: return true;
    // Ok: only while a regression is still the likelier reading of the CI's reach.
    case PerfStatus::Ok: return !(d.ci_high < 1.0 + d.threshold) && d.ratio > 1.0 + d.threshold / 2;
    case PerfStatus::Regression:
    case PerfStatus::Improvement:
    case PerfStatus::Insufficient: return false;
    }
    return false;
}

void guard_machine_speed(PerfDecision &d, const MachineMove &move, bool calibrated) {
    const auto known = [](double r) { return r > 0.0 && std::isfinite(r); };
    // Already ungated (and saying why), or a calibrated reading without its divisor.
    if (d.status == PerfStatus::Insufficient || d.status == PerfStatus::TooNoisy || (calibrated && !known(move.single))) return;
    double lowest = 1.0, highest = 1.0;  // the machine's move a kernel may have felt, none included
    for (double r : {move.single, move.parallel})
        if (known(r)) lowest = std::min(lowest, r), highest = std::max(highest, r);
    if (highest <= 1.0 + d.threshold && 1.0 / lowest <= 1.0 + d.threshold) return;
    // This reading times `into_absolute` is the absolute one; over a move m it is the kernel's own.
    const double into_absolute = calibrated ? move.single : 1.0;
    const double lower = into_absolute / highest, higher = into_absolute / lowest;
    if (d.status == PerfStatus::Regression && d.ci_low * lower > 1.0 + d.threshold) return;
    if (d.status == PerfStatus::Improvement && d.ci_high * higher < 1.0 - d.threshold) return;
    if (d.status == PerfStatus::Ok && (higher <= 1.0 || d.ci_high * higher < 1.0 + d.threshold)) return;
    d.status = PerfStatus::TooNoisy;
    d.machine_moved = true;
    const std::string parallel = known(move.parallel) ? fmt::format(", x{:.3f} on the suite's threads", move.parallel) : "";
    d.reason = fmt::format(
        "not gated: the machine's speed moved since the baseline was recorded (calibration workload x{:.3f} of its baseline "
        "time on one thread{}, beyond the {:g}% threshold), so the kernel's own change lies anywhere from x{:.3f} to x{:.3f} "
        "(this reading: median time x{:.3f} of baseline, {:.3g}% CI {:.3f} to {:.3f}), which does not settle the verdict; "
        "re-run on a steady machine, re-record the baseline here, or use paired A/B",
        move.single, parallel, 100 * d.threshold, d.ratio * lower, d.ratio * higher, d.ratio, 100 * d.ci_level, d.ci_low,
        d.ci_high);
}

namespace {
/// A timing's reading against its baseline or window, for a reproduction's reason.
std::string reading_said(const PerfDecision &d) {
    if (d.window_runs > 0)
        return fmt::format("fastest repetition x{:.3f} of its window's mean, the second fastest x{:.3f}", d.ratio, d.ci_high);
    return fmt::format("median time x{:.3f} of baseline, {:.3g}% CI {:.3f} to {:.3f}", d.ratio, 100 * d.ci_level, d.ci_low, d.ci_high);
}
}  // namespace

void require_reproduction(PerfDecision &first, const PerfDecision &second) {
    if (first.status != PerfStatus::Regression) return;
    if (second.status == PerfStatus::Regression) {
        first.reason += fmt::format("; reproduced in a second timing: {}", reading_said(second));
        return;
    }
    first.status = PerfStatus::TooNoisy;
    first.machine_moved = second.status != PerfStatus::Insufficient;  // timed again and not slower: the machine moved
    first.reason = fmt::format("not gated: a regression in the first timing ({}) did not reproduce in a second timing ({}: {}); "
                               "the machine's speed moved during the run, so re-run on a steady machine or use paired A/B",
                               reading_said(first), perf_status_name(second.status), second.reason);
}

void apply_benjamini_hochberg(std::vector<PerfDecision> &decisions, double alpha) {
    std::vector<double> slower, faster;
    for (const auto &d : decisions) {
        const bool tested = std::isfinite(d.ratio);  // unusable samples have no p-value
        slower.push_back(tested ? d.p_value : kNaN);
        faster.push_back(tested ? d.p_value_faster : kNaN);
    }
    const auto adj_slower = benjamini_hochberg(slower), adj_faster = benjamini_hochberg(faster);
    for (size_t i = 0; i < decisions.size(); ++i) {
        PerfDecision &d = decisions[i];
        if (std::isnan(adj_slower[i])) continue;
        d.p_adjusted = adj_slower[i];
        d.p_adjusted_faster = adj_faster[i];
        const bool lost = (d.status == PerfStatus::Regression && d.p_adjusted > alpha) ||
                          (d.status == PerfStatus::Improvement && d.p_adjusted_faster > alpha);
        if (!lost) continue;
        const double p = d.status == PerfStatus::Regression ? d.p_adjusted : d.p_adjusted_faster;
        const std::string correction = fmt::format(
            "not significant after correction for {} comparisons: adjusted p = {:.2g} > alpha {:g}",
            std::count_if(slower.begin(), slower.end(), [](double x) { return !std::isnan(x); }), p, alpha);
        // No longer conclusive: now the noise decides whether it can be called ok.
        if (d.repetitions < d.required_repetitions) {
            d.status = PerfStatus::TooNoisy;
            d.reason = too_noisy_reason(d) + "; " + correction;
        } else {
            d.status = PerfStatus::Ok;
            d.reason = fmt::format("{} (median time x{:.3f} of baseline)", correction, d.ratio);
        }
    }
}

}  // namespace attngate
