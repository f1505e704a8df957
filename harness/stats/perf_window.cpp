// The window rule: Student t prediction interval of a row's past runs, plus today's fastest repetitions.
#include "stats/perf_window.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include "stats/stats.hpp"

namespace attngate {

namespace {

/// The prediction interval's one-sided half-width at alpha, in log units.
double half_width(double alpha, double spread, int runs) {
    const boost::math::students_t t(runs - 1);
    return boost::math::quantile(t, 1.0 - alpha) * spread * std::sqrt(1.0 + 1.0 / runs);
}

std::string figures(const PerfDecision &d) {
    return fmt::format("fastest repetition x{:.3f} of its {}-run window's mean (the second fastest x{:.3f}; between-run spread "
                       "{:.1f}%)",
                       d.ratio, d.window_runs, d.ci_high, 100 * d.relative_noise);
}

void classify_window(PerfDecision &d, const DecisionPolicy &policy) {
    if (d.p_adjusted <= policy.alpha && d.ci_low > 1.0 + policy.threshold) {
        d.status = PerfStatus::Regression;
        d.reason = fmt::format("regression: {}, p = {:.2g} <= alpha {:g}, beyond the {:g}% threshold", figures(d), d.p_adjusted,
                               policy.alpha, 100 * policy.threshold);
    } else if (d.p_adjusted_faster <= policy.alpha && d.ci_high < 1.0 - policy.threshold) {
        d.status = PerfStatus::Improvement;
        d.reason = fmt::format("improvement: {}, p = {:.2g} <= alpha {:g}, beyond the {:g}% threshold", figures(d),
                               d.p_adjusted_faster, policy.alpha, 100 * policy.threshold);
    } else {
        d.status = PerfStatus::Ok;
        d.reason = fmt::format("no regression beyond {:g}%: {}, p = {:.2g}", 100 * policy.threshold, figures(d), d.p_adjusted);
    }
}

bool in_run_too_wide(const PerfDecision &d) {
    return d.ci_high / d.ratio > 1.0 + d.threshold || d.ratio / d.ci_low > 1.0 + d.threshold;
}

}  // namespace

int required_runs(double alpha, double spread, double threshold, int min_runs) {
    const double limit = std::log1p(threshold);
    for (int n = std::max(min_runs, 2); n < kRunsNoWindowReaches; ++n)
        if (half_width(alpha, spread, n) <= limit) return n;
    return kRunsNoWindowReaches;
}

std::string window_too_noisy_reason(const PerfDecision &d) {
    if (d.repetitions < d.required_repetitions && d.required_repetitions > kWindowRuns)  // a window keeps the last 20 runs
        return fmt::format("not gated: too noisy between runs: a spread of {:.1f}% over {} runs is too wide for a window of {} runs to "
                           "resolve the {:g}% threshold ({})",
                           100 * d.relative_noise, d.window_runs, kWindowRuns, 100 * d.threshold, figures(d));
    if (d.repetitions < d.required_repetitions)
        return fmt::format("not gated: too noisy between runs: a spread of {:.1f}% over {} runs needs {} runs in the window to "
                           "resolve the {:g}% threshold ({})",
                           100 * d.relative_noise, d.window_runs, d.required_repetitions, 100 * d.threshold, figures(d));
    return fmt::format("not gated: too noisy in this run: its two fastest repetitions are x{:.3f} apart, beyond the {:g}% "
                       "threshold: too few of them ran at the row's speed ({})",
                       d.ci_high / d.ci_low, 100 * d.threshold, figures(d));
}

PerfDecision decide_window(const WindowReading &today, const std::vector<double> &window, const DecisionPolicy &policy,
                           int min_runs) {
    PerfDecision d;
    d.threshold = policy.threshold;
    d.window_runs = static_cast<int>(window.size());
    d.repetitions = d.window_runs;
    const int n = d.window_runs;
    if (n < std::max(min_runs, 2)) {
        d.status = PerfStatus::Insufficient;
        d.collecting = true;
        d.ratio = d.ci_low = d.ci_high = d.relative_noise = kNaN;
        d.required_repetitions = std::max(min_runs, 2);
        d.reason = fmt::format("not gated: collecting: {} of {} runs in this row's window", n, d.required_repetitions);
        return d;
    }
    const double m = mean(window), s = stddev(window);
    d.relative_noise = s;
    d.ratio = std::exp(today.value - m);
    d.ci_low = std::exp(today.low - m), d.ci_high = std::exp(today.high - m);
    const boost::math::students_t t(n - 1);
    const double scale = s * std::sqrt(1.0 + 1.0 / n);
    if (scale > 0.0) {
        const double z = (today.value - m) / scale;
        d.p_value = d.p_adjusted = boost::math::cdf(boost::math::complement(t, z));
        d.p_value_faster = d.p_adjusted_faster = boost::math::cdf(t, z);
    } else {  // a window of identical values: any difference is certain, none is not
        d.p_value = d.p_adjusted = today.value > m ? 0.0 : 1.0;
        d.p_value_faster = d.p_adjusted_faster = today.value < m ? 0.0 : 1.0;
    }
    d.required_repetitions = required_runs(policy.alpha, s, policy.threshold, min_runs);
    classify_window(d, policy);
    // A window that cannot resolve the threshold at its spread gates nothing, either way: its
    // t interval assumes a spread it has not seen enough runs to know (measured: rows of such
    // windows ran 23% and 45% slower for a whole quiet run, and again in its second timing).
    if (d.repetitions < d.required_repetitions || (d.status == PerfStatus::Ok && in_run_too_wide(d))) {
        d.status = PerfStatus::TooNoisy;
        d.reason = window_too_noisy_reason(d);
    }
    return d;
}

double run_shift(std::vector<double> deviations) {
    std::erase_if(deviations, [](double x) { return !std::isfinite(x); });
    if (deviations.size() < static_cast<size_t>(kMinShiftRows)) return 0.0;
    return median(deviations);
}

double removable_shift(double shift, double threshold, const std::vector<double> &past, double alpha) {
    if (std::abs(shift) <= std::log1p(threshold) / 2) return shift;
    const int n = static_cast<int>(past.size());
    if (n >= kMinWindowRuns && std::abs(shift - mean(past)) <= half_width(alpha, stddev(past), n)) return shift;
    return 0.0;
}

std::vector<double> remove_run_shifts(std::vector<std::vector<double>> &by_row) {
    size_t runs = 0;
    for (const auto &row : by_row) runs = std::max(runs, row.size());
    std::vector<double> centers;
    for (const auto &row : by_row) {
        std::vector<double> present;
        std::copy_if(row.begin(), row.end(), std::back_inserter(present), [](double x) { return std::isfinite(x); });
        centers.push_back(present.empty() ? kNaN : median(present));
    }
    std::vector<double> shifts(runs, kNaN);
    for (size_t j = 0; j < runs; ++j) {
        std::vector<double> deviations;
        for (size_t r = 0; r < by_row.size(); ++r)
            if (j < by_row[r].size() && std::isfinite(by_row[r][j] - centers[r])) deviations.push_back(by_row[r][j] - centers[r]);
        if (deviations.size() < static_cast<size_t>(kMinShiftRows)) continue;
        shifts[j] = run_shift(std::move(deviations));
        for (auto &row : by_row)
            if (j < row.size()) row[j] -= shifts[j];
    }
    return shifts;
}

}  // namespace attngate
