// Descriptive statistics, bootstrap intervals and Benjamini-Hochberg.
#include "stats/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>

#include <boost/math/distributions/normal.hpp>

#include "io/rng.hpp"

namespace attngate {

namespace {

/// Median of a scratch buffer, reordering it (nth_element; no full sort).
double median_in_place(std::vector<double> &v) {
    if (v.empty()) return kNaN;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return lower + (upper - lower) / 2;
}

/// Type-7 quantile of an ascending-sorted sample.
double sorted_quantile(const std::vector<double> &sorted, double q) {
    if (sorted.empty() || !(q >= 0.0 && q <= 1.0)) return kNaN;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

/// Uniform index in [0, n) from 64 random bits (Lemire's multiply-shift on the top 32
/// bits; the bias, at most n / 2^32, is far below anything a CI can show).
size_t draw_index(uint64_t bits, size_t n) { return static_cast<size_t>(((bits >> 32) * n) >> 32); }

/// Median of one resample of v: element i of resample b uses counter b * n + i.
double resampled_median(const CounterRng &rng, const std::vector<double> &v, int b, std::vector<double> &scratch) {
    const size_t n = v.size();
    scratch.resize(n);
    const uint64_t base = static_cast<uint64_t>(b) * n;
    for (size_t i = 0; i < n; ++i) scratch[i] = v[draw_index(rng.bits(base + i), n)];
    return median_in_place(scratch);
}

ConfidenceInterval percentile_interval(std::vector<double> &stats, double level) {
    std::sort(stats.begin(), stats.end());
    return {sorted_quantile(stats, (1.0 - level) / 2), sorted_quantile(stats, (1.0 + level) / 2)};
}

}  // namespace

double mean(const std::vector<double> &v) {
    if (v.empty()) return kNaN;
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double> &v) {
    if (v.size() < 2) return kNaN;
    const double m = mean(v);
    double sum = 0.0;
    for (double x : v) sum += (x - m) * (x - m);
    return std::sqrt(sum / static_cast<double>(v.size() - 1));
}

double median(const std::vector<double> &v) {
    std::vector<double> copy = v;
    return median_in_place(copy);
}

double fastest(const std::vector<double> &v) { return v.empty() ? kNaN : *std::min_element(v.begin(), v.end()); }

double quantile(const std::vector<double> &v, double q) {
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    return sorted_quantile(sorted, q);
}

double mad(const std::vector<double> &v) {
    const double m = median(v);
    std::vector<double> dev(v.size());
    std::transform(v.begin(), v.end(), dev.begin(), [m](double x) { return std::abs(x - m); });
    return median_in_place(dev);
}

double mad_normal_scale() {
    static const double scale = 1.0 / boost::math::quantile(boost::math::normal(), 0.75);
    return scale;
}

double mad_scaled(const std::vector<double> &v) { return mad(v) * mad_normal_scale(); }

double relative_noise(const std::vector<double> &v) {
    const double m = median(v);
    if (!(m != 0.0)) return kNaN;
    return mad_scaled(v) / std::abs(m);
}

ConfidenceInterval bootstrap_median_ratio_ci(const std::vector<double> &current, const std::vector<double> &baseline,
                                             int resamples, uint64_t seed, double level) {
    if (current.empty() || baseline.empty() || resamples < 1) return {kNaN, kNaN};
    const CounterRng rng_current(seed, "bootstrap/current"), rng_baseline(seed, "bootstrap/baseline");
    std::vector<double> ratios(static_cast<size_t>(resamples)), scratch;
    for (int b = 0; b < resamples; ++b) {
        const double c = resampled_median(rng_current, current, b, scratch);
        ratios[static_cast<size_t>(b)] = c / resampled_median(rng_baseline, baseline, b, scratch);
    }
    return percentile_interval(ratios, level);
}

ConfidenceInterval bootstrap_paired_ratio_ci(const std::vector<double> &current, const std::vector<double> &baseline,
                                             int resamples, uint64_t seed, double level) {
    if (current.empty() || current.size() != baseline.size() || resamples < 1) return {kNaN, kNaN};
    std::vector<double> pair_ratios(current.size());
    for (size_t i = 0; i < current.size(); ++i) pair_ratios[i] = current[i] / baseline[i];
    const CounterRng rng(seed, "bootstrap/pairs");
    std::vector<double> medians(static_cast<size_t>(resamples)), scratch;
    for (int b = 0; b < resamples; ++b) medians[static_cast<size_t>(b)] = resampled_median(rng, pair_ratios, b, scratch);
    return percentile_interval(medians, level);
}

std::vector<double> benjamini_hochberg(const std::vector<double> &p_values) {
    std::vector<size_t> order;
    for (size_t i = 0; i < p_values.size(); ++i)
        if (!std::isnan(p_values[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
    std::vector<double> adjusted(p_values.size(), kNaN);
    const double m = static_cast<double>(order.size());
    double running_min = 1.0;
    for (size_t rank = order.size(); rank-- > 0;) {
        const size_t i = order[rank];
        running_min = std::min(running_min, p_values[i] * m / static_cast<double>(rank + 1));
        adjusted[i] = running_min;
    }
    return adjusted;
}

ConfidenceInterval median_ci(const std::vector<double> &v, double level) {
    const size_t n = v.size();
    const double tail = (1.0 - level) / 2.0;
    // P(B < k) for B ~ Binomial(n, 1/2), accumulated term by term in log space.
    double below = 0.0;
    size_t k = 0;
    for (size_t j = 0; j < n; ++j) {
        const double term = std::exp(std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(static_cast<double>(n - j) + 1.0) - n * std::log(2.0));
        if (below + term > tail) break;
        below += term;
        k = j + 1;  // P(B < j + 1) <= tail
    }
    if (k == 0 || 2 * k > n) return {NAN, NAN};
    std::vector<double> s(v);
    std::sort(s.begin(), s.end());
    return {s[k - 1], s[n - k]};
}

}  // namespace attngate
