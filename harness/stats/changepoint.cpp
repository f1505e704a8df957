// E-divisive means with a permutation test.
#include "stats/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "io/rng.hpp"
#include "stats/hypothesis.hpp"

namespace attngate {

Split e_divisive_best_split(const std::vector<double> &x, size_t begin, size_t end, size_t min_segment) {
    Split best{end, 0.0};
    const size_t len = end - begin;
    min_segment = std::max<size_t>(min_segment, 2);  // each side needs a pair for its within-term
    if (len < 2 * min_segment) return best;
    // Start with tau = begin: everything on the right. Moving x[tau] to the left changes
    // the within-left sum by a (its distances to the left), the within-right by -b (to the
    // rest of the right) and the cross sum by b - a.
    double within_left = 0.0, within_right = 0.0, cross = 0.0;
    for (size_t i = begin; i < end; ++i)
        for (size_t j = i + 1; j < end; ++j) within_right += std::fabs(x[i] - x[j]);
    for (size_t tau = begin; tau + min_segment <= end; ++tau) {
        const size_t m = tau - begin, n = end - tau;
        if (m >= min_segment) {
            const double e = 2.0 * cross / (static_cast<double>(m) * n) - within_left / (m * (m - 1) / 2.0) -
                             within_right / (n * (n - 1) / 2.0);
            const double q = static_cast<double>(m) * n / static_cast<double>(m + n) * e;
            if (best.index == end || q > best.q) best = {tau, q};
        }
        double a = 0.0, b = 0.0;
        for (size_t i = begin; i < tau; ++i) a += std::fabs(x[tau] - x[i]);
        for (size_t j = tau + 1; j < end; ++j) b += std::fabs(x[tau] - x[j]);
        within_left += a;
        within_right -= b;
        cross += b - a;
    }
    return best;
}

namespace {

/// The permutation p-value of a segment's best split: shuffles from the seeded stream.
double permutation_p(const std::vector<double> &x, size_t begin, size_t end, const Split &observed, const ChangePointOptions &o,
                     uint64_t stream) {
    const CounterRng rng(o.seed ^ stream, "e-divisive");
    std::vector<double> seg(x.begin() + static_cast<std::ptrdiff_t>(begin), x.begin() + static_cast<std::ptrdiff_t>(end));
    uint64_t draw = 0;
    int larger = 0;
    for (int p = 0; p < o.permutations; ++p) {
        for (size_t i = seg.size() - 1; i > 0; --i) std::swap(seg[i], seg[rng.bits(draw++) % (i + 1)]);  // Fisher-Yates
        if (e_divisive_best_split(seg, 0, seg.size(), o.min_segment).q >= observed.q) ++larger;
    }
    return (1.0 + larger) / (1.0 + o.permutations);
}

double segment_median(const std::vector<double> &x, size_t begin, size_t end) {
    return median(std::vector<double>(x.begin() + static_cast<std::ptrdiff_t>(begin), x.begin() + static_cast<std::ptrdiff_t>(end)));
}

}  // namespace

std::vector<ChangePoint> e_divisive(const std::vector<double> &values, const ChangePointOptions &o) {
    const std::vector<double> x = o.ranks ? mid_ranks(values).rank : values;
    std::vector<ChangePoint> found;
    std::vector<size_t> bounds = {0, x.size()};  // sorted segment boundaries
    while (found.size() < o.max_change_points) {
        Split best{0, -1.0};
        size_t seg_begin = 0, seg_end = 0;
        for (size_t s = 0; s + 1 < bounds.size(); ++s) {
            const Split cand = e_divisive_best_split(x, bounds[s], bounds[s + 1], o.min_segment);
            if (cand.index != bounds[s + 1] && cand.q > best.q) best = cand, seg_begin = bounds[s], seg_end = bounds[s + 1];
        }
        if (best.q <= 0.0) break;
        const double p = permutation_p(x, seg_begin, seg_end, best, o, found.size() + 1);
        if (p > o.alpha) break;
        found.push_back(ChangePoint{best.index, best.q, p, 0.0, 0.0});
        bounds.insert(std::upper_bound(bounds.begin(), bounds.end(), best.index), best.index);
    }
    std::sort(found.begin(), found.end(), [](const ChangePoint &a, const ChangePoint &b) { return a.index < b.index; });
    for (size_t i = 0; i < found.size(); ++i) {
        const size_t lo = i == 0 ? 0 : found[i - 1].index, hi = i + 1 == found.size() ? x.size() : found[i + 1].index;
        found[i].median_before = segment_median(values, lo, found[i].index);
        found[i].median_after = segment_median(values, found[i].index, hi);
    }
    return found;
}

}  // namespace attngate
