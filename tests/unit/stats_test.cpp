// Descriptive statistics, bootstrap intervals and Benjamini-Hochberg against known values.
// Known values were computed once with numpy 2 / scipy 1.17 (a throwaway venv) and are
// pinned here; each block names the call that produced them.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "io/rng.hpp"
#include "stats/stats.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
// Odd count, one outlier (0.52).
const std::vector<double> kSample = {0.31, 0.29, 0.35, 0.30, 0.52, 0.28, 0.33};

const auto synthetic = [](double center, double spread, int n, const char *stream) {
    return test::jittered_times(center, spread, n, stream);
};
}  // namespace

TEST_CASE("mean median and quantiles match numpy", "[stats]") {
    // numpy.mean / median / quantile(v, q) (linear, numpy's default).
    CHECK(mean(kSample) == Approx(0.34));
    CHECK(median(kSample) == 0.31);
    CHECK(quantile(kSample, 0.1) == Approx(0.286));
    CHECK(quantile(kSample, 0.25) == Approx(0.295));
    CHECK(quantile(kSample, 0.9) == Approx(0.418));
    CHECK(quantile(kSample, 0.0) == 0.28);
    CHECK(quantile(kSample, 1.0) == 0.52);
    const std::vector<double> even = {4.0, 1.0, 3.0, 2.0};
    CHECK(median(even) == 2.5);
    CHECK(quantile(even, 0.5) == 2.5);
    CHECK(quantile(even, 1.0 / 3.0) == Approx(2.0));
}

TEST_CASE("stddev matches numpy std with ddof 1", "[stats]") {
    // numpy.std([2, 4, 4, 4, 5, 5, 7, 9], ddof=1)
    CHECK(stddev({2, 4, 4, 4, 5, 5, 7, 9}) == Approx(2.138089935299395));
    CHECK(stddev({3.0, 3.0}) == 0.0);
    CHECK(std::isnan(stddev({1.0})));
}

TEST_CASE("mad scaled and unscaled match scipy median_abs_deviation", "[stats]") {
    // scipy.stats.median_abs_deviation(v, scale=1) and (v, scale='normal').
    CHECK(mad(kSample) == Approx(0.02));
    CHECK(mad_scaled(kSample) == Approx(0.029652044370112065));
    CHECK(mad_normal_scale() == Approx(1.482602218505602).epsilon(1e-14));
    CHECK(mad({4.0, 1.0, 3.0, 2.0}) == 1.0);
    CHECK(relative_noise(kSample) == Approx(0.029652044370112065 / 0.31));
}

TEST_CASE("empty samples are not measured rather than zero", "[stats]") {
    const std::vector<double> none;
    CHECK(std::isnan(mean(none)));
    CHECK(std::isnan(median(none)));
    CHECK(std::isnan(quantile(none, 0.5)));
    CHECK(std::isnan(mad(none)));
    CHECK(std::isnan(quantile(kSample, 1.5)));
    CHECK(std::isnan(bootstrap_median_ratio_ci(none, kSample).low));
    CHECK(std::isnan(bootstrap_paired_ratio_ci(kSample, {1.0}).high));
}

TEST_CASE("benjamini hochberg matches scipy false_discovery_control", "[stats]") {
    // scipy.stats.false_discovery_control(p, method='bh').
    const auto a = benjamini_hochberg({0.01, 0.04, 0.03, 0.005, 0.2, 0.04});
    const std::vector<double> want_a = {0.03, 0.048, 0.048, 0.03, 0.2, 0.048};
    REQUIRE(a.size() == want_a.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(want_a[i]));
    const auto b = benjamini_hochberg({0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216});
    const std::vector<double> want_b = {0.01, 0.04, 0.084, 0.084, 0.084, 0.1, 0.1057142857142857, 0.216, 0.216, 0.216};
    for (size_t i = 0; i < b.size(); ++i) CHECK(b[i] == Approx(want_b[i]));
}

TEST_CASE("benjamini hochberg caps at one and skips NaN", "[stats]") {
    const double nan = std::nan("");
    const auto a = benjamini_hochberg({0.9, nan, 0.95, 0.02});
    CHECK(a[0] == Approx(0.95));  // min(0.9 * 3 / 2, 0.95 * 3 / 3)
    CHECK(std::isnan(a[1]));
    CHECK(a[2] == Approx(0.95));
    CHECK(a[3] == Approx(0.06));
    CHECK(benjamini_hochberg({1.0, 1.0})[0] == 1.0);
}

TEST_CASE("bootstrap ratio CI contains the true ratio of a shifted sample", "[stats]") {
    // A 95% interval must cover the true ratio in about 95% of independent experiments:
    // 200 experiments, 30 vs 30 samples, current = 1.10 x a draw of the baseline's law.
    int covered = 0;
    for (int t = 0; t < 200; ++t) {
        const CounterRng rng(1000 + static_cast<uint64_t>(t), "experiment");
        std::vector<double> base, cur;
        for (uint64_t i = 0; i < 30; ++i) {
            base.push_back(1.0 + 0.03 * rng.uniform(i));
            cur.push_back(1.10 * (1.0 + 0.03 * rng.uniform(100 + i)));
        }
        const auto ci = bootstrap_median_ratio_ci(cur, base, 1000);
        REQUIRE(ci.low <= median(cur) / median(base));
        REQUIRE(ci.high >= median(cur) / median(base));
        REQUIRE(ci.low > 1.05);  // informative: well away from "no change"
        covered += ci.low <= 1.10 && 1.10 <= ci.high;
    }
    CHECK(covered >= 180);  // >= 90%: a binomial(200, 0.95) falls below 180 with p < 0.001
    CHECK(covered < 200);   // and it is not vacuously wide
}

TEST_CASE("bootstrap ratio CI narrows with more samples", "[stats]") {
    const auto narrow = bootstrap_median_ratio_ci(synthetic(1.1, 0.05, 200, "c"), synthetic(1.0, 0.05, 200, "b"));
    const auto wide = bootstrap_median_ratio_ci(synthetic(1.1, 0.05, 10, "c"), synthetic(1.0, 0.05, 10, "b"));
    CHECK(narrow.high - narrow.low < 0.5 * (wide.high - wide.low));
}

TEST_CASE("bootstrap CIs are deterministic for a seed and change with it", "[stats]") {
    const auto b = synthetic(1.0, 0.05, 15, "b"), c = synthetic(1.02, 0.05, 15, "c");
    const auto one = bootstrap_median_ratio_ci(c, b, 2000, 11), two = bootstrap_median_ratio_ci(c, b, 2000, 11);
    CHECK(one.low == two.low);
    CHECK(one.high == two.high);
    const auto other = bootstrap_median_ratio_ci(c, b, 2000, 12);
    CHECK((other.low != one.low || other.high != one.high));
    const auto p1 = bootstrap_paired_ratio_ci(c, b, 500, 3), p2 = bootstrap_paired_ratio_ci(c, b, 500, 3);
    CHECK(p1.low == p2.low);
    CHECK(p1.high == p2.high);
}

TEST_CASE("paired bootstrap CI brackets the per-pair ratio and ignores shared drift", "[stats]") {
    // Baseline drifts by a factor of 3 across pairs; the candidate is 8% slower in every
    // pair, within 1% noise. Unpaired medians would be swamped by the drift.
    const auto noise = synthetic(1.0, 0.01, 40, "pair-noise");
    std::vector<double> base, cur;
    for (int i = 0; i < 40; ++i) {
        base.push_back(1.0 + 2.0 * i / 39.0);
        cur.push_back(base.back() * 1.08 * noise[static_cast<size_t>(i)]);
    }
    const auto ci = bootstrap_paired_ratio_ci(cur, base);
    CHECK(ci.low < 1.08);
    CHECK(ci.high > 1.08);
    CHECK(ci.high - ci.low < 0.02);
}

TEST_CASE("a sample with no spread gives a degenerate interval", "[stats]") {
    const std::vector<double> flat(12, 2.0), half(12, 1.0);
    const auto ci = bootstrap_median_ratio_ci(flat, half);
    CHECK(ci.low == 2.0);
    CHECK(ci.high == 2.0);
}
