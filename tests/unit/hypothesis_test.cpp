// Mann-Whitney U and Wilcoxon signed-rank p-values against scipy, and the minimum
// repetition counts against hand computation. The scipy values were computed once with
// scipy 1.17 (throwaway venv) by the calls named next to each block.
#include <vector>

#include <catch2/catch.hpp>

#include "stats/hypothesis.hpp"

using namespace attngate;

namespace {
const std::vector<double> kCurrent = {0.105, 0.111, 0.098, 0.120, 0.109, 0.115, 0.102, 0.118};
const std::vector<double> kBaseline = {0.100, 0.097, 0.104, 0.099, 0.110, 0.095, 0.101, 0.103, 0.096};

std::vector<double> ramp(double start, double step, int n, double wiggle = 0.0) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(start + step * i + wiggle * (i % 3));
    return v;
}
}  // namespace

TEST_CASE("exact mann whitney matches scipy on small samples without ties", "[hypothesis]") {
    // scipy.stats.mannwhitneyu(x, y, alternative='greater', method='exact').
    auto r = mann_whitney_greater(kCurrent, kBaseline);
    CHECK(r.exact);
    CHECK(r.statistic == 61.0);
    CHECK(r.p_value == Approx(0.007610037021801727).epsilon(1e-10));
    r = mann_whitney_greater(kBaseline, kCurrent);
    CHECK(r.statistic == 11.0);
    CHECK(r.p_value == Approx(0.9944467297408474).epsilon(1e-10));
    // Complete separation, 5 vs 5: 1 / C(10, 5) = 1 / 252.
    r = mann_whitney_greater({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
    CHECK(r.statistic == 25.0);
    CHECK(r.p_value == Approx(1.0 / 252).epsilon(1e-12));
    CHECK(mann_whitney_greater({3, 4, 5}, {1, 2, 6}).p_value == Approx(0.35).epsilon(1e-12));
}

TEST_CASE("exact mann whitney holds at the 20 per side limit", "[hypothesis]") {
    // x = 1.0 + 0.013 i + 0.0005 (i % 3), y = 0.93 + 0.0123 i, i < 20: scipy exact.
    const auto r = mann_whitney_greater(ramp(1.0, 0.013, 20, 0.0005), ramp(0.93, 0.0123, 20));
    CHECK(r.exact);
    CHECK(r.statistic == 304.0);
    CHECK(r.p_value == Approx(0.0021333728423731805).epsilon(1e-9));
}

TEST_CASE("mann whitney with ties uses the tie corrected normal approximation", "[hypothesis]") {
    // scipy.stats.mannwhitneyu(x, y, alternative='greater', method='asymptotic'),
    // use_continuity=True (its default).
    const std::vector<double> x = {1, 2, 2, 3, 3, 3, 4, 5}, y = {1, 1, 2, 2, 3, 4};
    auto r = mann_whitney_greater(x, y);
    CHECK_FALSE(r.exact);
    CHECK(r.statistic == 32.0);
    CHECK(r.p_value == Approx(0.15962631485751094).epsilon(1e-10));
    CHECK(mann_whitney_greater(y, x).p_value == Approx(0.8705076710238127).epsilon(1e-10));
}

TEST_CASE("mann whitney beyond 20 per side uses the normal approximation", "[hypothesis]") {
    // x = 0.5 + 0.01 i (30), y = 0.43 + 0.0117 i (25), no ties: scipy asymptotic.
    const auto r = mann_whitney_greater(ramp(0.5, 0.01, 30), ramp(0.43, 0.0117, 25));
    CHECK_FALSE(r.exact);
    CHECK(r.statistic == 539.0);
    CHECK(r.p_value == Approx(0.002857902039283888).epsilon(1e-10));
}

TEST_CASE("mann whitney with nothing to compare gives no evidence", "[hypothesis]") {
    CHECK(mann_whitney_greater({}, {1.0}).p_value == 1.0);
    CHECK(mann_whitney_greater(std::vector<double>(25, 1.0), std::vector<double>(25, 1.0)).p_value == 1.0);
}

TEST_CASE("exact wilcoxon signed rank matches scipy", "[hypothesis]") {
    // scipy.stats.wilcoxon(a, b, alternative='greater', method='exact'): 10 pairs, the
    // differences have distinct magnitudes, T+ = 49, p = 14 / 1024.
    const std::vector<double> a = {1.21, 1.05, 1.33, 1.16, 1.08, 1.27, 1.16, 1.02, 1.19, 1.10};
    const std::vector<double> b = {1.10, 1.07, 1.15, 1.01, 1.09, 1.13, 1.04, 1.06, 1.11, 1.00};
    auto r = wilcoxon_greater(a, b);
    CHECK(r.exact);
    CHECK(r.statistic == 49.0);
    CHECK(r.p_value == Approx(0.013671875).epsilon(1e-12));
    r = wilcoxon_greater(b, a);
    CHECK(r.statistic == 6.0);
    CHECK(r.p_value == Approx(0.990234375).epsilon(1e-12));
}

TEST_CASE("wilcoxon with zeros and ties uses the corrected normal approximation", "[hypothesis]") {
    // scipy.stats.wilcoxon(c, d, alternative='greater', method='asymptotic',
    // correction=True), zero_method='wilcox' (its default: the zero difference is dropped).
    const std::vector<double> c = {2, 3, 5, 5, 4, 6, 7, 3, 5, 9, 4, 6}, d = {1, 3, 3, 4, 5, 4, 5, 2, 3, 6, 5, 4};
    auto r = wilcoxon_greater(c, d);
    CHECK_FALSE(r.exact);
    CHECK(r.statistic == 60.0);
    CHECK(r.p_value == Approx(0.008105529771034738).epsilon(1e-10));
    CHECK(wilcoxon_greater(d, c).p_value == Approx(0.9936994924981197).epsilon(1e-10));
}

TEST_CASE("wilcoxon without usable pairs gives no evidence", "[hypothesis]") {
    CHECK(wilcoxon_greater({1.0, 2.0}, {1.0}).p_value == 1.0);
    CHECK(wilcoxon_greater({1.0, 2.0}, {1.0, 2.0}).p_value == 1.0);
}

TEST_CASE("minimum repetitions reach alpha and explain the nine per side", "[hypothesis]") {
    // 1 / C(2n, n): n = 4 gives 1/70 = 0.0143 > 0.01, n = 5 gives 1/252 = 0.00397.
    CHECK(min_repetitions_for_alpha(0.01) == 5);
    CHECK(min_repetitions_for_alpha(0.04) == 4);  // 1/70 <= 0.04 < 1/20
    // A lone significant case among 200 needs p <= 0.01 / 200 = 5e-5 after BH:
    // C(16, 8) = 12870 is too few, C(18, 9) = 48620 is enough.
    CHECK(min_repetitions_for_alpha(0.01, 200) == 9);
    // Pairs: 2^-7 = 0.0078 <= 0.01 < 2^-6; 2^-15 = 3.05e-5 <= 5e-5 < 2^-14.
    CHECK(min_pairs_for_alpha(0.01) == 7);
    CHECK(min_pairs_for_alpha(0.01, 200) == 15);
}
