// E-divisive change points and the median's order-statistic CI, against known values.
#include <catch2/catch.hpp>

#include "io/rng.hpp"
#include "stats/changepoint.hpp"
#include "stats/hypothesis.hpp"
#include "stats/stats.hpp"

using namespace attngate;

namespace {
/// base x (1 + noise x u), u uniform on [-1, 1): deterministic.
std::vector<double> noisy(size_t n, double base, double noise, const char *stream) {
    const CounterRng rng(11, stream);
    std::vector<double> v;
    for (size_t i = 0; i < n; ++i) v.push_back(base * (1.0 + noise * rng.uniform(i)));
    return v;
}
}  // namespace

TEST_CASE("the divergence statistic by hand", "[changepoint]") {
    // x = 0 0 1 1 split at 2: cross mean distance 1 -> 2 * 1, within 0: e = 2,
    // Q = (2 * 2 / 4) * 2 = 2.
    const std::vector<double> x = {0, 0, 1, 1};
    const Split s = e_divisive_best_split(x, 0, 4, 2);
    CHECK(s.index == 2);
    CHECK(s.q == Approx(2.0));
    // 0 0 0 3 3 3 split at 3: cross 9 pairs of 3 -> 2/9 * 27 = 6, Q = 9/6 * 6 = 9.
    const std::vector<double> y = {0, 0, 0, 3, 3, 3};
    CHECK(e_divisive_best_split(y, 0, 6, 2).index == 3);
    CHECK(e_divisive_best_split(y, 0, 6, 2).q == Approx(9.0));
    CHECK(e_divisive_best_split(y, 0, 3, 2).index == 3);  // too short to split: index == end
}

TEST_CASE("a 3% step in 1% noise is found where it is, with its size", "[changepoint]") {
    std::vector<double> x = noisy(60, 1.0, 0.01, "step");
    for (size_t i = 30; i < x.size(); ++i) x[i] *= 1.03;
    const auto cps = e_divisive(x);
    REQUIRE(cps.size() == 1);
    CHECK(cps[0].index >= 29);
    CHECK(cps[0].index <= 31);
    CHECK(cps[0].p_value <= 0.01);
    CHECK(cps[0].relative_change() == Approx(0.03).margin(0.005));
}

TEST_CASE("pure noise and constant series have no change point", "[changepoint]") {
    CHECK(e_divisive(noisy(60, 1.0, 0.01, "flat")).empty());
    CHECK(e_divisive(std::vector<double>(40, 2.5)).empty());
    CHECK(e_divisive({1, 2, 3}).empty());
}

TEST_CASE("the same series gives the same answer", "[changepoint]") {
    std::vector<double> x = noisy(50, 1.0, 0.02, "again");
    for (size_t i = 20; i < x.size(); ++i) x[i] *= 1.05;
    const auto a = e_divisive(x), b = e_divisive(x);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].p_value == b[i].p_value);
}

TEST_CASE("ranks keep a step visible under heavy-tailed outliers", "[changepoint]") {
    const Ranks r = mid_ranks({3, 1, 2, 2});
    CHECK(r.rank == std::vector<double>{4, 1, 2.5, 2.5});
    CHECK(r.tie_term == 6.0);  // one pair of ties: 2^3 - 2
    CHECK(r.has_ties);
    std::vector<double> x = noisy(60, 1.0, 0.01, "tails");
    for (size_t i = 30; i < x.size(); ++i) x[i] *= 1.03;
    for (size_t i : {3, 11, 17, 26, 34, 41, 52, 58}) x[i] *= 1.3;  // runs that shared their cores
    const auto cps = e_divisive(x);
    REQUIRE(cps.size() == 1);
    CHECK(cps[0].index == Approx(30).margin(1));
    CHECK(cps[0].relative_change() == Approx(0.03).margin(0.006));
}

TEST_CASE("median CI from order statistics", "[stats]") {
    std::vector<double> ten = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    const auto ci = median_ci(ten);
    CHECK(ci.low == 2.0);  // ranks 2 and 9 of 10
    CHECK(ci.high == 9.0);
    std::vector<double> twenty;
    for (int i = 1; i <= 20; ++i) twenty.push_back(i);
    CHECK(median_ci(twenty).low == 6.0);  // ranks 6 and 15 of 20
    CHECK(median_ci(twenty).high == 15.0);
    CHECK(std::isnan(median_ci({1, 2, 3, 4, 5}).low));
    CHECK(median_ci({1, 2, 3, 4, 5, 6}).low == 1.0);
}
