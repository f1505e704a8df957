// Descriptive statistics over timing samples, bootstrap confidence intervals and the
// Benjamini-Hochberg correction: small pure functions over std::vector<double>, in the
// manner of google/benchmark's src/statistics.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace attngate {

/// "Not measured": what the statistics below return for too few values (never 0).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Arithmetic mean; NaN for an empty sample ("not measured" is never 0).
double mean(const std::vector<double> &v);

/// Sample standard deviation (n - 1 in the denominator, as Google Benchmark's stddev
/// aggregate and numpy.std(ddof=1)); NaN below two values.
double stddev(const std::vector<double> &v);

/// Median (mean of the two middle values for an even count); NaN when empty.
double median(const std::vector<double> &v);

/// The smallest value (a timing's fastest repetition); NaN when empty.
double fastest(const std::vector<double> &v);

/// Quantile q in [0, 1] with linear interpolation between order statistics (Hyndman and
/// Fan's type 7, numpy's and R's default): position q * (n - 1). NaN when empty.
double quantile(const std::vector<double> &v, double q);

/// Median absolute deviation, unscaled: median(|x - median(x)|). NaN when empty.
double mad(const std::vector<double> &v);

/// 1 / Phi^-1(3/4) = 1.4826...: scales the MAD into a consistent estimator of the
/// standard deviation for normally distributed data.
double mad_normal_scale();

/// Scaled MAD: mad(v) * mad_normal_scale(), an outlier-robust estimate of the standard
/// deviation. attngate reports and gates with this one ("mad_s" in results.json).
double mad_scaled(const std::vector<double> &v);

/// Relative noise of a sample: mad_scaled(v) / median(v). NaN when empty or median is 0.
double relative_noise(const std::vector<double> &v);

/// A two-sided confidence interval; NaN bounds when it could not be computed.
struct ConfidenceInterval {
    double low = 0.0;
    double high = 0.0;
};

/// Seed of the bootstrap streams when a caller does not choose one.
inline constexpr uint64_t kDefaultBootstrapSeed = 0x61747467617465ull;  // "attgate"

/// Percentile bootstrap CI of median(current) / median(baseline): each resample draws
/// current and baseline independently, with replacement, from attngate's CounterRng
/// (seeded streams, so the same inputs give the same interval on every platform), and the
/// CI is the type-7 quantiles (1 - level) / 2 and (1 + level) / 2 of the resampled ratios.
/// NaN bounds when either side is empty or resamples < 1.
ConfidenceInterval bootstrap_median_ratio_ci(const std::vector<double> &current, const std::vector<double> &baseline,
                                             int resamples = 2000, uint64_t seed = kDefaultBootstrapSeed,
                                             double level = 0.95);

/// Percentile bootstrap CI of the median of per-pair ratios current[i] / baseline[i]
/// (paired A/B samples: pairs are resampled together). NaN bounds when the sizes differ or
/// are 0.
ConfidenceInterval bootstrap_paired_ratio_ci(const std::vector<double> &current, const std::vector<double> &baseline,
                                             int resamples = 2000, uint64_t seed = kDefaultBootstrapSeed,
                                             double level = 0.95);

/// Benjamini-Hochberg adjusted p-values, in the input order: p_(i) * m / i over the
/// ascending order, made monotone from the largest down, capped at 1. A NaN input stays NaN
/// and does not count in m.
std::vector<double> benjamini_hochberg(const std::vector<double> &p_values);

/// Distribution-free confidence interval of the median from order statistics: the
/// largest k with P(Binomial(n, 1/2) < k) <= (1 - level) / 2 gives [x_(k), x_(n+1-k)]
/// (1-based, sorted), covering the median with probability >= level for any continuous
/// distribution (n = 10: ranks 2 and 9; n = 20: 6 and 15). NaN bounds when n is too small
/// for the level (n < 6 at 95%).
ConfidenceInterval median_ci(const std::vector<double> &v, double level = 0.95);

}  // namespace attngate
