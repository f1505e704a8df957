// Mann-Whitney U and Wilcoxon signed-rank tests, one-sided, exact or normal.
#include "stats/hypothesis.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/special_functions/binomial.hpp>

namespace attngate {

Ranks mid_ranks(const std::vector<double> &v) {
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    Ranks r;
    r.rank.resize(v.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
        const double t = static_cast<double>(j - i + 1);
        for (size_t k = i; k <= j; ++k) r.rank[order[k]] = static_cast<double>(i + j) / 2.0 + 1.0;
        r.tie_term += t * t * t - t;
        r.has_ties = r.has_ties || t > 1;
        i = j + 1;
    }
    return r;
}

namespace {

/// P(Z >= z) for a standard normal.
double upper_tail(double z) { return boost::math::cdf(boost::math::complement(boost::math::normal(), z)); }

/// P(U >= u) under H0 for sizes m, n, by the recursion
/// P_{i,j}(u) = i/(i+j) P_{i-1,j}(u - j) + j/(i+j) P_{i,j-1}(u) over probabilities (no
/// overflow of counts), keeping one row of j at a time.
double mann_whitney_exact_sf(size_t m, size_t n, long u) {
    const size_t umax = m * n;
    // prev[j][k]: distribution of U for (i - 1, j); cur for (i, j).
    std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
    for (size_t j = 0; j <= n; ++j) prev[j].assign(umax + 1, 0.0), prev[j][0] = 1.0;  // i = 0: U = 0
    for (size_t i = 1; i <= m; ++i) {
        cur[0].assign(umax + 1, 0.0);
        cur[0][0] = 1.0;  // j = 0: U = 0
        for (size_t j = 1; j <= n; ++j) {
            cur[j].assign(umax + 1, 0.0);
            const double wi = static_cast<double>(i) / static_cast<double>(i + j), wj = 1.0 - wi;
            for (size_t k = 0; k <= i * j; ++k)
                cur[j][k] = (k >= j ? wi * prev[j][k - j] : 0.0) + wj * cur[j - 1][k];
        }
        std::swap(prev, cur);
    }
    double p = 0.0;
    for (size_t k = static_cast<size_t>(std::max(u, 0L)); k <= umax; ++k) p += prev[n][k];
    return std::min(p, 1.0);
}

/// P(T+ >= t) under H0 for n ranks 1..n, each in T+ with probability 1/2: subset-sum
/// counts (exact in double up to n = 50 < 53 bits) over 2^n.
double wilcoxon_exact_sf(size_t n, long t) {
    const size_t tmax = n * (n + 1) / 2;
    std::vector<double> count(tmax + 1, 0.0);
    count[0] = 1.0;
    for (size_t r = 1; r <= n; ++r)
        for (size_t s = r * (r + 1) / 2; s >= r; --s) count[s] += count[s - r];
    double tail = 0.0;
    for (size_t k = static_cast<size_t>(std::max(t, 0L)); k <= tmax; ++k) tail += count[k];
    return std::min(std::ldexp(tail, -static_cast<int>(n)), 1.0);
}

}  // namespace

RankTestResult mann_whitney_greater(const std::vector<double> &x, const std::vector<double> &y) {
    const size_t m = x.size(), n = y.size();
    if (m == 0 || n == 0) return {0.0, 1.0, false};
    std::vector<double> all = x;
    all.insert(all.end(), y.begin(), y.end());
    const Ranks r = mid_ranks(all);
    const double rank_sum_x = std::accumulate(r.rank.begin(), r.rank.begin() + static_cast<std::ptrdiff_t>(m), 0.0);
    const double u = rank_sum_x - static_cast<double>(m * (m + 1)) / 2.0;
    if (!r.has_ties && m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax)
        return {u, mann_whitney_exact_sf(m, n, std::lround(u)), true};
    const double nm = static_cast<double>(m), nn = static_cast<double>(n), total = nm + nn;
    const double var = nm * nn / 12.0 * ((total + 1.0) - r.tie_term / (total * (total - 1.0)));
    if (!(var > 0.0)) return {u, 1.0, false};
    return {u, upper_tail((u - nm * nn / 2.0 - 0.5) / std::sqrt(var)), false};
}

RankTestResult wilcoxon_greater(const std::vector<double> &x, const std::vector<double> &y) {
    if (x.size() != y.size()) return {0.0, 1.0, false};
    std::vector<double> d, abs_d;
    for (size_t i = 0; i < x.size(); ++i)
        if (x[i] - y[i] != 0.0) d.push_back(x[i] - y[i]), abs_d.push_back(std::abs(x[i] - y[i]));
    const bool had_zeros = d.size() != x.size();
    const size_t n = d.size();
    if (n == 0) return {0.0, 1.0, false};
    const Ranks r = mid_ranks(abs_d);
    double t_plus = 0.0;
    for (size_t i = 0; i < n; ++i)
        if (d[i] > 0) t_plus += r.rank[i];
    if (!r.has_ties && !had_zeros && n <= kWilcoxonExactMax) return {t_plus, wilcoxon_exact_sf(n, std::lround(t_plus)), true};
    const double nn = static_cast<double>(n);
    const double var = (nn * (nn + 1.0) * (2.0 * nn + 1.0) - r.tie_term / 2.0) / 24.0;
    if (!(var > 0.0)) return {t_plus, 1.0, false};
    return {t_plus, upper_tail((t_plus - nn * (nn + 1.0) / 4.0 - 0.5) / std::sqrt(var)), false};
}

int min_repetitions_for_alpha(double alpha, size_t comparisons) {
    const double target = alpha / static_cast<double>(std::max<size_t>(comparisons, 1));
    int n = 1;
    while (n < 500 && 1.0 / boost::math::binomial_coefficient<double>(2u * unsigned(n), unsigned(n)) > target) ++n;
    return n;
}

int min_pairs_for_alpha(double alpha, size_t comparisons) {
    const double target = alpha / static_cast<double>(std::max<size_t>(comparisons, 1));
    int n = 1;
    while (n < 1000 && std::ldexp(1.0, -n) > target) ++n;
    return n;
}

}  // namespace attngate
