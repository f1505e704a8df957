// Pair coverage: features count only where they change the output, and the smoke suite
// has every meaningful pair of features in at least one case.
#include <algorithm>

#include <catch2/catch.hpp>

#include "plan/coverage.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
Suite suite_of(std::vector<CaseSpec> cases) {
    Suite s;
    s.name = "coverage";
    s.seed = 3;
    s.cases = std::move(cases);
    return s;
}

bool has(const std::vector<Feature> &fs, Feature f) { return std::find(fs.begin(), fs.end(), f) != fs.end(); }
}  // namespace

TEST_CASE("features count only where they change the output", "[coverage]") {
    auto decode = test::small_case("decode", 1, 300, 4, 2, 16);
    decode.causal = true;  // one row at the last key sees every key: causal masks nothing
    const Suite s = suite_of({decode});
    auto f = case_features(s, decode);
    CHECK_FALSE(has(f, Feature::Causal));
    CHECK(has(f, Feature::Gqa));
    CHECK(has(f, Feature::CrossLength));
    CHECK(has(f, Feature::PartialBlock));  // 300 keys: a partial last 128-key block
    CHECK(has(f, Feature::F32));

    auto wide = test::small_case("wide", 128, 128, 2, 2, 16);
    wide.window_left = wide.window_right = 1000;
    CHECK_FALSE(has(case_features(s, wide), Feature::Window));
    wide.window_right = 0;  // now it masks the future: a window that does something
    CHECK(has(case_features(s, wide), Feature::Window));
    CHECK_FALSE(has(case_features(s, wide), Feature::PartialBlock));

    auto empty = test::small_case("empty", 100, 40, 2, 2, 16);
    empty.causal = true;  // bottom-right: the first 60 rows see no key
    CHECK(has(case_features(s, empty), Feature::EmptyRows));
    empty.causal = false;
    CHECK_FALSE(has(case_features(s, empty), Feature::EmptyRows));
    empty.segments = 1;  // one segment is no packing
    CHECK_FALSE(has(case_features(s, empty), Feature::Segments));
}

TEST_CASE("the pair table counts cases with both features and names the missing pairs", "[coverage]") {
    auto a = test::small_case("a", 16, 16, 2, 2, 8);
    a.softcap = 5;
    auto b = test::small_case("b", 16, 16, 2, 2, 8);
    b.bias_shape = {1, 2, 16, 16};
    b.dtype = ATTNGATE_DTYPE_BF16;
    const Coverage cov = suite_coverage(suite_of({a, b}));
    const auto at = [&](Feature x, Feature y) { return cov.together[size_t(x)][size_t(y)]; };
    CHECK(at(Feature::Softcap, Feature::Softcap) == 1);
    CHECK(at(Feature::Softcap, Feature::F32) == 1);
    CHECK(at(Feature::Bias, Feature::Bf16) == 1);
    CHECK(at(Feature::Bias, Feature::Softcap) == 0);
    CHECK(std::find(cov.missing.begin(), cov.missing.end(), std::pair{Feature::Bias, Feature::Softcap}) != cov.missing.end());
    // f32 x bf16 cannot meet in one case: never reported missing.
    CHECK(meaningless_pair(Feature::F32, Feature::Bf16) != nullptr);
    CHECK(std::find(cov.missing.begin(), cov.missing.end(), std::pair{Feature::F32, Feature::Bf16}) == cov.missing.end());
    // Every pair but f32 x bf16 and the paged features (paged, ragged, kv%page) with segments, bias, empty rows.
    CHECK(cov.meaningful_pairs() == 17 * 16 / 2 - 1 - 3 * 3);
}

TEST_CASE("the smoke suite has every meaningful pair of features in some case", "[coverage][suite]") {
    auto s = load_suite(std::filesystem::path(ATTNGATE_SOURCE_DIR) / "suites" / "smoke.json");
    REQUIRE(s);
    const Coverage cov = suite_coverage(*s);
    std::string missing;
    for (const auto &[x, y] : cov.missing) missing += std::string(feature_name(x)) + " x " + feature_name(y) + "; ";
    INFO("missing: " << missing);
    CHECK(cov.missing.empty());
    // Soft-cap with bias, the pair whose order of operations a kernel can get wrong.
    CHECK(cov.together[size_t(Feature::Softcap)][size_t(Feature::Bias)] >= 2);
}
