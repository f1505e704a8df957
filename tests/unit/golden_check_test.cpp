// Golden comparison metrics with known values, the tolerance rule and NaN handling.
#include <cmath>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "checks/golden_check.hpp"

using namespace attngate;

namespace {
GoldenEntry entry(double sf_err, double max_abs, double sf_rms = -1.0) {
    GoldenEntry g;
    g.shape = {1, 2, 1, 2};
    g.straightforward_max_abs_error = sf_err;
    g.straightforward_rms_error = sf_rms;
    g.output_max_abs = max_abs;
    return g;
}
}  // namespace

TEST_CASE("error metrics of a known difference", "[golden]") {
    const std::vector<double> want = {1.0, -2.0, 0.5, 4.0};
    const std::vector<float> got = {1.0f, -2.0f, 0.75f, 4.0f};  // one element off by 0.25
    const OutputErrors e = measure_errors(got, want);
    CHECK(e.max_abs == 0.25);
    CHECK(e.worst_index == 2);
    CHECK(e.max_rel == 0.5);
    CHECK(e.rms == Approx(std::sqrt(0.0625 / 4)));
    CHECK(e.nmse == Approx(0.0625 / (1 + 4 + 0.25 + 16)));
    CHECK(index_coords(2, std::vector<int64_t>{1, 2, 1, 2}) == "[0, 1, 0, 0]");
}

TEST_CASE("tolerance is 2x the straightforward error plus 2 f32 ulp at the output's scale, whatever the operands", "[golden]") {
    CHECK(golden_tolerance(entry(1e-7, 1.0)) == Approx(2e-7 + 2 * std::ldexp(1.0, -23)));
    // A bf16 case's output is f32 too: its floor is 2 f32 ulp, no longer 2 bf16 ulp (2^-6 x 4
    // = 0.0625 here, 31 times the rest of the tolerance).
    CHECK(golden_tolerance(entry(1e-3, 4.0)) == Approx(2e-3 + 2 * 4 * std::ldexp(1.0, -23)));
    CHECK(golden_floor(entry(1e-3, 4.0)) == Approx(8 * std::ldexp(1.0, -23)));
    CHECK(golden_rms_tolerance(entry(1e-3, 4.0, 2e-4)) == Approx(4e-4 + 8 * std::ldexp(1.0, -23)));
    CHECK(golden_rms_tolerance(entry(1e-3, 4.0)) < 0);  // a manifest without the straightforward RMS
}

TEST_CASE("the margin is the error over the tolerance, reported on a pass", "[golden]") {
    const std::vector<double> want = {1.0, -2.0, 0.5, 4.0};
    const GoldenEntry g = entry(1e-3, 4.0, 1e-3);
    const double tol = golden_tolerance(g);
    std::vector<float> got = {1.0f, -2.0f, 0.5f, static_cast<float>(4.0 + tol * 0.5)};
    const CheckResult r = golden_check(got, want, g);
    CHECK(r.verdict == Verdict::Pass);
    CHECK(*r.as<GoldenMetrics>().margin == Approx(0.5).epsilon(1e-3));
    CHECK(*r.as<GoldenMetrics>().rms_margin == Approx(tol * 0.5 / 2 / golden_rms_tolerance(g)).epsilon(1e-3));
    CHECK_THAT(r.reason, Catch::Contains("(margin 0.50)"));
}

TEST_CASE("a shift spread over every element fails on the RMS error while each element is within tolerance", "[golden]") {
    // Each element 0.8 x the max-abs tolerance off: max abs passes, but the RMS error is 0.8 x
    // that tolerance too, 2 x the straightforward RMS error (a quarter of its max, as for
    // Gaussian rounding errors over many elements) is far less.
    const std::vector<double> want = {1.0, -2.0, 0.5, 4.0};
    const GoldenEntry g = entry(1e-3, 4.0, 2.5e-4);
    const double tol = golden_tolerance(g);
    std::vector<float> got;
    for (double w : want) got.push_back(static_cast<float>(w + 0.8 * tol));
    const CheckResult r = golden_check(got, want, g);
    CHECK(r.verdict == Verdict::Fail);
    CHECK(*r.as<GoldenMetrics>().margin < 1.0);
    CHECK(*r.as<GoldenMetrics>().rms_margin > 1.0);
    CHECK_THAT(r.reason, Catch::StartsWith("RMS error") && Catch::Contains("shift spread over many elements"));
    // Without the straightforward RMS in the manifest only max abs is gated, and a note says so.
    const CheckResult old = golden_check(got, want, entry(1e-3, 4.0));
    CHECK(old.verdict == Verdict::Pass);
    REQUIRE(old.notes.size() == 1);
    CHECK_THAT(old.notes[0], Catch::Contains("regenerate the goldens"));
}

TEST_CASE("golden check passes within tolerance and fails beyond it, naming the place", "[golden]") {
    const std::vector<double> want = {1.0, -2.0, 0.5, 4.0};
    const GoldenEntry g = entry(1e-3, 4.0);
    const double tol = golden_tolerance(g);
    std::vector<float> got = {1.0f, -2.0f, 0.5f, 4.0f};
    got[3] = static_cast<float>(4.0 + tol * 0.5);
    CHECK(golden_check(got, want, g).verdict == Verdict::Pass);
    got[3] = static_cast<float>(4.0 + tol * 2);
    const CheckResult r = golden_check(got, want, g);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("[0, 1, 0, 1]") && Catch::Contains("tolerance"));
}

TEST_CASE("NaN or inf where the golden is finite fails at once, whatever the error", "[golden]") {
    const std::vector<double> want = {1.0, 2.0, 3.0, 4.0};
    const GoldenEntry g = entry(100.0, 4.0);  // a huge tolerance must not hide it
    std::vector<float> got = {1.0f, 2.0f, std::numeric_limits<float>::infinity(), 4.0f};
    const CheckResult r = golden_check(got, want, g);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("NaN/inf") && Catch::Contains("[0, 1, 0, 0]"));
}

TEST_CASE("a kernel that turns a propagated NaN into a number is drift", "[golden]") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> want = {1.0, nan, 3.0, 4.0};
    std::vector<float> got = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, 4.0f};
    CHECK(golden_check(got, want, entry(0, 4)).verdict == Verdict::Pass);
    got[1] = 0.0f;
    const CheckResult r = golden_check(got, want, entry(0, 4));
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("golden is NaN"));
    CHECK_THAT(r.reason, !Catch::Contains("max abs error"));  // the finite elements are right
    // A wrong mask drops the NaN key and moves the rows around it: both are said.
    got[3] = 3.0f;
    const CheckResult mask = golden_check(got, want, entry(0, 4));
    CHECK_THAT(mask.reason, Catch::StartsWith("1 finite output(s) where the golden is NaN") &&
                                Catch::Contains("; and max abs error 1 > tolerance") && Catch::Contains("(got 3, want 4)"));
}

TEST_CASE("the error map puts a drift in the last positions into the last rows", "[golden]") {
    // Shape [1, 8, 2, 4]; the error sits at sequence positions 6 and 7 only.
    const std::vector<int64_t> shape = {1, 8, 2, 4};
    std::vector<double> want(64, 1.0);
    std::vector<float> got(64, 1.0f);
    got[((0 * 8 + 6) * 2 + 1) * 4 + 3] = 1.5f;
    got[((0 * 8 + 7) * 2 + 0) * 4 + 0] = std::numeric_limits<float>::quiet_NaN();
    const ErrorMap m = error_map(got, want, shape, 4, 2);
    CHECK(m.rows == 4);
    CHECK(m.cols == 2);
    const auto &v = m.values;
    CHECK(v[3][1] == 0.5);          // positions 6-7, dims 2-3
    CHECK_FALSE(v[3][0].has_value());  // the NaN shows as non-finite
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 2; ++c) CHECK(v[r][c] == 0.0);
}

TEST_CASE("a failure's got and want differ in its reason, however close they are", "[golden]") {
    // Two floats one f32 ulp apart at 0.177: six significant digits printed both as 0.177212.
    const std::vector<double> want = {1.0, -2.0, 0.177212, 4.0};
    const float above = std::nextafter(static_cast<float>(want[2]), 1.0f);
    const std::vector<float> got = {1.0f, -2.0f, std::nextafter(above, 1.0f), 4.0f};
    const CheckResult r = golden_check(got, want, entry(0.0, 1e-9));
    REQUIRE(r.verdict == Verdict::Fail);
    const auto printed = [&](const char *label) {
        const size_t at = r.reason.find(label);
        REQUIRE(at != std::string::npos);
        const size_t from = at + std::string(label).size();
        return std::stod(r.reason.substr(from, r.reason.find_first_of(",)", from) - from));
    };
    CHECK(static_cast<float>(printed("got ")) == got[2]);
    CHECK(printed("want ") == Approx(want[2]).epsilon(1e-8));
    CHECK(static_cast<float>(printed("got ")) != static_cast<float>(printed("want ")));
}
