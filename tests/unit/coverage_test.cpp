// Pair coverage: features count only where they change the output, a suite's kernels ask
// only for the pairs they declare, the smoke suite has every meaningful pair of features in
// at least one case, and docs/suites.md states the tool's numbers.
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

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

KernelInfo declaring(std::string name, uint32_t features) {
    KernelInfo k;
    k.name = std::move(name);
    k.features = features;
    k.origin = "test";
    return k;
}

bool has_pair(const std::vector<std::pair<Feature, Feature>> &pairs, Feature a, Feature b) {
    return std::find(pairs.begin(), pairs.end(), std::pair{a, b}) != pairs.end();
}

/// One case with every dense feature a kernel with causal, window and bias can have, in f32:
/// bottom-right causal over Sq > Sk empties rows, 80 keys make a partial block.
CaseSpec everything_f32(std::string id) {
    auto c = test::small_case(std::move(id), 112, 80, 2, 2, 16);
    c.batch = 2;
    c.causal = true;
    c.window_left = 16, c.window_right = 0;
    c.bias_shape = {2, 2, 112, 80};
    c.nan = NanInjection{"k", {1, 79, 1, 3}};
    return c;
}
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

TEST_CASE("a suite for an f32-only kernel asks only for the pairs the kernel declares", "[coverage]") {
    const KernelInfo f32_only = declaring("f32-only", ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_WINDOW | ATTNGATE_FEATURE_BIAS | ATTNGATE_FEATURE_F32);
    Suite s = suite_of({everything_f32("all_f32")});
    s.kernels = {KernelSpec{.kernel = "f32-only", .json_path = "$.kernels[0]"}};
    auto plan = make_plan(s, {&f32_only}, {});
    REQUIRE(plan);
    const Coverage cov = suite_coverage(s, *plan);
    REQUIRE(cov.kernels.size() == 1);
    // causal, window, bias, f32 and what needs no declaration (sq!=sk, sk%128, batch>1, nan),
    // and empty rows (a causal mask can empty one): 9 features, every pair of them meaningful.
    CHECK(cov.kernels[0].required == 9 * 8 / 2);
    CHECK(cov.required_pairs() == 36);
    CHECK(cov.kernels[0].cases == 1);
    CHECK(cov.missing.empty());
    CHECK(cov.missing_for_some_kernel().empty());
    CHECK_FALSE(cov.required[size_t(Feature::Causal)][size_t(Feature::Bf16)]);
    // The same suite counted for a kernel that declares everything misses every bf16 pair.
    const Coverage all = suite_coverage(s);
    CHECK(has_pair(all.missing, Feature::Causal, Feature::Bf16));
    CHECK(has_pair(all.missing, Feature::Bias, Feature::Softcap));
    CHECK(all.required_pairs() == all.meaningful_pairs());
}

TEST_CASE("a pair counts for a kernel only in the cases it runs", "[coverage]") {
    // plain declares no bias, so it runs neither case with bias; biased runs all three.
    const KernelInfo plain = declaring("plain", ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_SOFTCAP | ATTNGATE_FEATURE_F32);
    const KernelInfo biased = declaring("biased", plain.features | ATTNGATE_FEATURE_BIAS);
    auto both = test::small_case("causal_softcap_bias", 64, 64, 2, 2, 16);
    both.causal = true, both.softcap = 5, both.bias_shape = {1, 2, 64, 64};
    auto only_biased = test::small_case("causal_only_biased", 64, 64, 2, 2, 16);
    only_biased.causal = true, only_biased.softcap = 5;
    only_biased.kernels = {"biased"};  // a case that names its kernels
    Suite s = suite_of({both, only_biased});
    s.kernels = {KernelSpec{.kernel = "plain", .json_path = "$.kernels[0]"}, KernelSpec{.kernel = "biased", .json_path = "$.kernels[1]"}};
    auto plan = make_plan(s, {&plain, &biased}, {});
    REQUIRE(plan);
    const Coverage cov = suite_coverage(s, *plan);
    REQUIRE(cov.kernels.size() == 2);
    CHECK(cov.kernels[0].kernel == "plain");
    CHECK(cov.kernels[0].cases == 0);
    CHECK(cov.kernels[1].cases == 2);
    // causal x softcap: biased meets it, plain never does.
    CHECK_FALSE(has_pair(cov.missing, Feature::Causal, Feature::Softcap));
    CHECK(has_pair(cov.kernels[0].missing, Feature::Causal, Feature::Softcap));
    CHECK(has_pair(cov.missing_for_some_kernel(), Feature::Causal, Feature::Softcap));
    // A pair no kernel declares is not asked for; one both declare and neither meets is missing.
    CHECK_FALSE(cov.required[size_t(Feature::Causal)][size_t(Feature::Window)]);
    CHECK(has_pair(cov.missing, Feature::Causal, Feature::Batch));
}

TEST_CASE("declared features and the pairs a kernel can reach", "[coverage]") {
    const uint32_t paged = ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_PAGED_KV;
    // Without ragged batches every paged query is a one-row decode step: causal masks nothing.
    CHECK_FALSE(required_pair(Feature::Causal, Feature::Paged, paged));
    CHECK_FALSE(required_pair(Feature::Causal, Feature::PartialPage, paged));
    CHECK(required_pair(Feature::Causal, Feature::Paged, paged | ATTNGATE_FEATURE_RAGGED));
    CHECK(required_pair(Feature::Nan, Feature::Paged, paged));
    CHECK_FALSE(declares(paged, Feature::Ragged));
    CHECK_FALSE(declares(ATTNGATE_FEATURE_RAGGED | ATTNGATE_FEATURE_F32, Feature::Ragged));  // ragged is paged
    CHECK(declares(ATTNGATE_FEATURE_WINDOW, Feature::EmptyRows));
    CHECK_FALSE(declares(ATTNGATE_FEATURE_SEGMENT_IDS | ATTNGATE_FEATURE_F32, Feature::EmptyRows));
    for (Feature f : {Feature::CrossLength, Feature::PartialBlock, Feature::Batch, Feature::Nan}) CHECK(declares(0, f));
    CHECK_FALSE(required_pair(Feature::F32, Feature::Bf16, ATTNGATE_FEATURE_ALL_PAGED));  // meaningless
}

namespace {
/// docs/suites.md's coverage section.
std::string coverage_doc() {
    std::ifstream f(std::filesystem::path(ATTNGATE_SOURCE_DIR) / "docs" / "suites.md");
    std::stringstream text;
    text << f.rdbuf();
    const std::string doc = text.str();
    const size_t from = doc.find("### Coverage");
    REQUIRE(from != std::string::npos);
    return doc.substr(from, doc.find("\n#", from + 1) - from);
}

int number_after(const std::string &text, const std::string &pattern) {
    std::smatch m;
    const bool found = std::regex_search(text, m, std::regex(pattern));
    INFO("pattern: " << pattern);
    REQUIRE(found);
    return std::stoi(m[1]);
}
}  // namespace

TEST_CASE("docs/suites.md states the tool's features and pair counts", "[coverage][docs]") {
    const std::string doc = coverage_doc();
    Suite empty = suite_of({});
    const Coverage cov = suite_coverage(empty);
    CHECK(number_after(doc, R"(for (\d+) features)") == int(kFeatureCount));
    CHECK(number_after(doc, R"(\*\*(\d+) meaningful pairs\*\*)") == cov.meaningful_pairs());
    CHECK(number_after(doc, R"(covers all (\d+))") == cov.meaningful_pairs());
    int meaningless = 0;
    for (Feature a : all_features())
        for (Feature b : all_features()) meaningless += a < b && meaningless_pair(a, b) != nullptr;
    CHECK(meaningless == 10);  // when this changes, so does the doc's "Ten pairs are meaningless"
    CHECK(doc.find("Ten pairs are meaningless") != std::string::npos);
    // The feature table lists the names the tool prints, in its order.
    std::vector<std::string> listed;
    const std::regex row(R"(\n\| `([^`]+)` \|)");
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it) listed.push_back((*it)[1]);
    std::vector<std::string> names;
    for (Feature f : all_features()) names.emplace_back(feature_name(f));
    CHECK(listed == names);
}
