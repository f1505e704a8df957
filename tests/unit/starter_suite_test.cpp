// The starter suite `attngate init` writes: for any declared features, a valid suite of
// small cases whose coverage is complete for each kernel, the same for the same kernels.
#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "plan/starter_suite.hpp"

using namespace attngate;

namespace {

KernelInfo starter_kernel(std::string name, uint32_t features, uint32_t api_version = ATTNGATE_API_VERSION) {
    KernelInfo k;
    k.name = std::move(name);
    k.features = effective_features(api_version, features);
    k.api_version = api_version;
    k.origin = "test";
    return k;
}

/// Checks the starter suite of `kernels` as `suite coverage --each-kernel` would, from its text.
void check_starter(const std::vector<const KernelInfo *> &kernels) {
    std::string names;
    for (const auto *k : kernels) names += k->name + "=" + feature_names(k->features) + "; ";
    INFO("kernels: " << names);
    auto starter = starter_suite("team", kernels);
    REQUIRE(starter);
    auto suite = parse_suite(starter->text, "team.json");
    REQUIRE(suite);
    CHECK(suite->cases.size() == starter->cases);
    CHECK(starter->cases <= 40);
    auto plan = make_plan(*suite, kernels, {});
    REQUIRE(plan);
    const Coverage cov = suite_coverage(*suite, *plan);
    std::string missing;
    for (const auto &[a, b] : cov.missing_for_some_kernel()) missing += std::string(feature_name(a)) + " x " + feature_name(b) + "; ";
    INFO("missing: " << missing);
    CHECK(cov.missing_for_some_kernel().empty());
    for (const auto &c : suite->cases) {
        INFO("case " << c.id);
        CHECK(c.estimated_bytes() < (int64_t{8} << 20));  // goldens in milliseconds
        CHECK(std::any_of(kernels.begin(), kernels.end(), [&](const KernelInfo *k) { return missing_features(*k, c).empty(); }));
    }
    // Each declared feature has a case of its own (with what it brings along), so a failure names it.
    for (const auto *k : kernels)
        for (Feature f : all_features()) {
            if (!declares(k->features, f)) continue;
            INFO("feature " << feature_name(f) << " of " << k->name);
            CHECK(std::any_of(suite->cases.begin(), suite->cases.end(), [&](const CaseSpec &c) {
                const auto fs = case_features(*suite, c);
                return std::find(fs.begin(), fs.end(), f) != fs.end() && fs.size() <= 5 && !c.id.starts_with("pairs_");
            }));
        }
}

}  // namespace

TEST_CASE("the starter suite covers each kernel's declared pairs, for named feature sets", "[starter]") {
    const KernelInfo all = starter_kernel("all", ATTNGATE_FEATURE_ALL_PAGED);
    const KernelInfo dense = starter_kernel("dense", ATTNGATE_FEATURE_ALL);
    const KernelInfo f32_only = starter_kernel("f32", ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_BF16);
    const KernelInfo bf16_only = starter_kernel("bf16", ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_F32);
    const KernelInfo paged_decode = starter_kernel("decode", ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_GQA | ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_PAGED_KV);
    const KernelInfo segments_only = starter_kernel("segments", ATTNGATE_FEATURE_SEGMENT_IDS | ATTNGATE_FEATURE_BF16);
    const KernelInfo plain = starter_kernel("plain", ATTNGATE_FEATURE_F32);
    const KernelInfo old_abi = starter_kernel("old-abi", 0xffffffffu, 2);  // version 2: the paged bits mean nothing
    for (const KernelInfo *k : {&all, &dense, &f32_only, &bf16_only, &paged_decode, &segments_only, &plain, &old_abi}) check_starter({k});
    check_starter({&f32_only, &bf16_only});
    check_starter({&paged_decode, &dense, &segments_only});
}

TEST_CASE("an f32-only kernel's starter suite has no bf16 case", "[starter]") {
    const KernelInfo f32_only = starter_kernel("f32", ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_BIAS | ATTNGATE_FEATURE_F32);
    auto starter = starter_suite("team", {&f32_only});
    REQUIRE(starter);
    auto suite = parse_suite(starter->text, "team.json");
    REQUIRE(suite);
    for (const auto &c : suite->cases) CHECK(c.dtype == ATTNGATE_DTYPE_F32);
    REQUIRE(starter->coverage.kernels.size() == 1);
    // causal, bias, f32, sq!=sk, sk%128, batch>1, nan, empty_rows: 8 features, 28 pairs.
    CHECK(starter->coverage.kernels[0].required == 28);
}

TEST_CASE("the starter suite covers each kernel's declared pairs, for random feature sets", "[starter]") {
    std::mt19937 rng(20261203);
    for (int i = 0; i < 60; ++i) {
        uint32_t bits = rng() & ATTNGATE_FEATURE_ALL_PAGED;
        if (!(bits & (ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_BF16))) bits |= ATTNGATE_FEATURE_F32;
        const KernelInfo a = starter_kernel("a", bits);
        check_starter({&a});
        if (i % 6 == 0) {
            const KernelInfo b = starter_kernel("b", (rng() & ATTNGATE_FEATURE_ALL_PAGED) | ATTNGATE_FEATURE_BF16);
            check_starter({&a, &b});
        }
    }
}

/// The starter's cases with a NaN in V.
std::vector<CaseSpec> v_nan_cases(const std::vector<const KernelInfo *> &kernels) {
    auto starter = starter_suite("team", kernels);
    REQUIRE(starter);
    auto suite = parse_suite(starter->text, "team.json");
    REQUIRE(suite);
    std::vector<CaseSpec> out;
    for (const auto &c : suite->cases)
        if (c.nan && c.nan->tensor == "v") out.push_back(c);
    return out;
}

TEST_CASE("the starter suite puts a NaN in V at a masked key, unless the kernel declares that leak", "[starter]") {
    // A kernel that masks with a zero weight passes every NaN-in-K case and turns 0 * NaN into a
    // NaN row here: the case must mask the NaN's key for some rows and run on the kernel.
    for (uint32_t mask : {ATTNGATE_FEATURE_CAUSAL, ATTNGATE_FEATURE_WINDOW, ATTNGATE_FEATURE_SEGMENT_IDS}) {
        const KernelInfo k = starter_kernel("mine", mask | ATTNGATE_FEATURE_GQA | ATTNGATE_FEATURE_F32);
        INFO(feature_names(k.features));
        const auto cases = v_nan_cases({&k});
        REQUIRE(cases.size() == 1);
        const CaseSpec &c = cases[0];
        CHECK(missing_features(k, c).empty());
        CHECK_FALSE(c.timed);  // for correctness only
        CHECK(c.id.ends_with("_nan_in_v"));
        const bool masks = (mask == ATTNGATE_FEATURE_CAUSAL && c.causal) || (mask == ATTNGATE_FEATURE_WINDOW && c.window_left >= 0) ||
                           (mask == ATTNGATE_FEATURE_SEGMENT_IDS && c.segments > 1);
        CHECK(masks);
        CHECK(c.nan->index[1] == c.seq_k - 1);  // the last key: the last row sees it, a mask hides it from others
        CHECK(c.seq_q > 1);
    }
    // No mask declared: no key is masked, so no such case; an adapter's kernel that declares the
    // leak would decline it.
    const KernelInfo plain = starter_kernel("plain", ATTNGATE_FEATURE_BIAS | ATTNGATE_FEATURE_F32);
    CHECK(v_nan_cases({&plain}).empty());
    KernelInfo leaks = starter_kernel("xla", ATTNGATE_FEATURE_ALL);
    leaks.conventions["masked_nan_leaks"] = boost::json::array{"v"};
    CHECK(v_nan_cases({&leaks}).empty());
    leaks.conventions["masked_nan_leaks"] = boost::json::array{"k"};
    CHECK(v_nan_cases({&leaks}).size() == 1);
}

TEST_CASE("the starter suite is the same for the same kernels, and refuses a kernel with no dtype", "[starter]") {
    const KernelInfo k = starter_kernel("mine", ATTNGATE_FEATURE_ALL);
    auto first = starter_suite("team", {&k});
    auto second = starter_suite("team", {&k});
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first->text == second->text);
    const KernelInfo none = starter_kernel("none", ATTNGATE_FEATURE_CAUSAL);
    auto refused = starter_suite("team", {&none});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().kind == ErrorKind::BadInput);
    CHECK(refused.error().message.find("\"none\"") != std::string::npos);
}
