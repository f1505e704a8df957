// Change points in a series of per-run figures (a case's median time over nightly runs):
// E-divisive means (Matteson and James 2014, the method of MongoDB's signal-processing
// and Apache Otava's regression detection) with a permutation test, finding both steps
// and the knee of a slow drift that no single run's threshold caught. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stats/stats.hpp"

namespace attngate {

/// The best single split of x[begin, end): the first index of the second part and its
/// divergence statistic (alpha = 1)
///
///     Q(tau) = m n / (m + n) * ( 2/(m n) sum_{i<tau<=j} |x_i - x_j|
///                                - C(m,2)^-1 sum_{i<k<tau} |x_i - x_k|
///                                - C(n,2)^-1 sum_{tau<=j<k} |x_j - x_k| )
///
/// over tau with at least min_segment points on each side (m = tau - begin,
/// n = end - tau). O((end - begin)^2). index == end when no split is allowed.
struct Split {
    size_t index = 0;
    double q = 0.0;
};
Split e_divisive_best_split(const std::vector<double> &x, size_t begin, size_t end, size_t min_segment);

struct ChangePointOptions {
    size_t min_segment = 5;     ///< fewest runs on either side of a change
    int permutations = 199;     ///< of the permutation test
    double alpha = 0.01;        ///< a split is kept when its permutation p-value is at most this
    size_t max_change_points = 8;
    uint64_t seed = kDefaultBootstrapSeed;  ///< the shuffles come from CounterRng: same series, same answer
    /// Split the series' ranks rather than its values: timings on shared machines have
    /// heavy tails (a run that shared its cores is 20% slow), which dominate the distances
    /// of raw values; ranks keep a shift of the bulk visible and make the test distribution-free.
    bool ranks = true;
};

struct ChangePoint {
    size_t index = 0;           ///< the first run after the change
    double q = 0.0;             ///< divergence of the split
    double p_value = 1.0;       ///< (1 + #shuffles with a larger best q) / (1 + permutations)
    double median_before = 0.0;  ///< median of the segment before (bounded by neighbouring change points)
    double median_after = 0.0;   ///< and after
    /// median_after / median_before - 1: +0.03 is 3% higher (slower, for times).
    double relative_change() const { return median_before != 0.0 ? median_after / median_before - 1.0 : 0.0; }
};

/// Repeatedly splits the segment whose best split has the largest q, while that split's
/// permutation p-value (the segment's values shuffled, best q recomputed) is at most
/// alpha (on the ranks of x unless options.ranks is off). Change points come back sorted by index. Non-finite values are not allowed
/// (checked by the caller); fewer than 2 * min_segment values give none.
std::vector<ChangePoint> e_divisive(const std::vector<double> &x, const ChangePointOptions &options = {});

}  // namespace attngate
