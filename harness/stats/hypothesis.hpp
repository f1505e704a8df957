// One-sided rank tests for timing samples: Mann-Whitney U (independent runs) and the
// Wilcoxon signed-rank test (paired A/B runs), exact for small samples without ties, the
// normal approximation with tie and continuity corrections otherwise; and the smallest
// sample sizes at which these tests can reach a given alpha.
#pragma once

#include <cstddef>
#include <vector>

namespace attngate {

/// Mid-ranks (1-based, ties share their mean rank) of v, and sum(t^3 - t) over its groups
/// of t ties (what the normal approximations correct for).
struct Ranks {
    std::vector<double> rank;
    double tie_term = 0.0;
    bool has_ties = false;
};
Ranks mid_ranks(const std::vector<double> &v);

/// Outcome of a one-sided rank test.
struct RankTestResult {
    double statistic = 0.0;  ///< U of the first sample (Mann-Whitney) or T+ (Wilcoxon)
    double p_value = 1.0;
    bool exact = false;      ///< exact null distribution (true) or normal approximation
};

/// Largest per-side size for the exact Mann-Whitney distribution.
inline constexpr size_t kMannWhitneyExactMax = 20;
/// Largest number of non-zero differences for the exact Wilcoxon distribution.
inline constexpr size_t kWilcoxonExactMax = 50;

/// Mann-Whitney U test of H1 "x is stochastically greater than y" (with times: x, the
/// current run, is slower than y, the baseline). U = R_x - n_x (n_x + 1) / 2 with mid-ranks
/// for ties; p = P(U >= U_obs | H0). Exact (recursion over counts, Mann and Whitney 1947)
/// when both sizes are <= kMannWhitneyExactMax and there are no ties; otherwise
/// z = (U - n_x n_y / 2 - 0.5) / sigma with the tie-corrected sigma^2 =
/// n_x n_y / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))). This matches
/// scipy.stats.mannwhitneyu(x, y, alternative='greater', method='exact' / 'asymptotic').
/// p = 1 when a side is empty or every value is tied (no evidence either way).
RankTestResult mann_whitney_greater(const std::vector<double> &x, const std::vector<double> &y);

/// Wilcoxon signed-rank test of H1 "x - y tends to be positive" for pairs (x[i], y[i]):
/// zero differences are dropped (Wilcoxon's method), T+ is the sum of the mid-ranks of |d|
/// over positive d, p = P(T+ >= T+_obs | H0). Exact when no |d| ties, no zeros and at most
/// kWilcoxonExactMax differences; otherwise z = (T+ - n (n + 1) / 4 - 0.5) / sigma with
/// sigma^2 = (n (n + 1) (2n + 1) - sum(t^3 - t) / 2) / 24. This matches
/// scipy.stats.wilcoxon(x, y, alternative='greater', correction=True, method='exact' /
/// 'asymptotic'). p = 1 when the sizes differ or no non-zero difference is left.
RankTestResult wilcoxon_greater(const std::vector<double> &x, const std::vector<double> &y);

/// Smallest n such that the exact one-sided Mann-Whitney test with n vs n samples can
/// reach p <= alpha / comparisons, i.e. 1 / C(2n, n) <= alpha / comparisons. Dividing by
/// the number of comparisons bounds what Benjamini-Hochberg needs for a lone significant
/// case among m (its adjusted p is m * p): alpha = 0.01 gives 5 with one comparison and 9
/// with 200 comparisons, the "at least 9 per side". Ties only raise the minimum.
int min_repetitions_for_alpha(double alpha, size_t comparisons = 1);

/// Smallest n pairs such that the exact one-sided Wilcoxon test can reach
/// p <= alpha / comparisons, i.e. 2^-n <= alpha / comparisons (7 for 0.01, 15 for 0.01/200).
int min_pairs_for_alpha(double alpha, size_t comparisons = 1);

}  // namespace attngate
