// Every built-in kernel, feature by feature and edge case by edge case, against the fp64
// reference, with the same tolerance rule the gate applies.
#include <cmath>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "attngate/builtin_kernels.hpp"
#include "checks/golden_check.hpp"
#include "backend/kernel_registry.hpp"
#include "backend/memory.hpp"
#include "kernel_oracle.hpp"
#include "plan/inputs.hpp"
#include "test_support.hpp"

using namespace attngate;
using test::calibrate;
using test::run_reference;
using test::small_case;

namespace {

Suite test_suite() { return test::kernel_test_suite(); }

struct KernelRun {
    const char *name;
    int64_t block_q = 0, block_k = 0;
};

const KernelRun kAllKernels[] = {
    {"reference"}, {"native"}, {"flash"}, {"flash", 16, 16}, {"flash", 64, 32}, {"flash", 7, 13}, {"flash", 128, 16},
};

std::vector<float> run_kernel(const KernelRun &k, const CaseSpec &c, const CaseInputs &in) {
    static const KernelRegistry reg = KernelRegistry::with_builtins();
    const attngate_kernel *kernel = reg.find(k.name);
    REQUIRE(kernel);
    std::vector<float> out(static_cast<size_t>(output_elements(c)), -777.0f);
    CountingAllocator alloc;
    const attngate_problem p = make_problem(c, in, out.data(), alloc.abi(), k.block_q, k.block_k);
    char err[256] = {0};
    REQUIRE(kernel->run(kernel, &p, err, sizeof err) == 0);
    CHECK(alloc.live_bytes() == 0);  // every workspace byte handed back
    return out;
}

/// Runs every kernel on c and requires each to pass the golden check against reference.
std::vector<double> require_all_kernels_match(const CaseSpec &c) {
    const CaseInputs in = generate_inputs(test_suite(), c);
    const auto ref = run_reference(c, in);
    const GoldenEntry g = calibrate(c, in, ref);
    for (const auto &k : kAllKernels) {
        const auto out = run_kernel(k, c, in);
        const CheckResult r = golden_check(out, ref, g);
        INFO(c.id << " on " << k.name << " bq=" << k.block_q << " bk=" << k.block_k << ": " << r.reason);
        REQUIRE(r.verdict == Verdict::Pass);
    }
    return ref;
}

CaseSpec bf16(CaseSpec c) {
    c.dtype = ATTNGATE_DTYPE_BF16;
    c.id += "_bf16";
    return c;
}

int64_t out_at(const CaseSpec &c, int64_t b, int64_t i, int64_t h, int64_t d) {
    return ((b * c.seq_q + i) * c.heads_q + h) * c.head_dim_v + d;
}

}  // namespace

TEST_CASE("the built-in registry holds reference, native, flash and flash-decode at the ABI version", "[kernels]") {
    size_t n = 0;
    const attngate_kernel *t = attngate_builtin_kernels(&n);
    REQUIRE(n == 4);
    CHECK(std::string(t[0].name) == "reference");
    CHECK(std::string(t[1].name) == "native");
    CHECK(std::string(t[2].name) == "flash");
    CHECK(std::string(t[3].name) == "flash-decode");
    for (size_t i = 0; i < n; ++i) CHECK(t[i].api_version == ATTNGATE_API_VERSION);
    for (size_t i = 0; i < 3; ++i) CHECK(t[i].features == ATTNGATE_FEATURE_ALL_PAGED);
    // A decode kernel: no bias, no segment ids; constant workspace like flash.
    CHECK(t[3].features == (ATTNGATE_FEATURE_ALL_PAGED & ~(ATTNGATE_FEATURE_BIAS | ATTNGATE_FEATURE_SEGMENT_IDS)));
    CHECK(t[3].workspace_growth == ATTNGATE_WORKSPACE_CONSTANT);
}

TEST_CASE("each feature matches the reference on every kernel, f32 and bf16", "[kernels]") {
    std::vector<CaseSpec> cases;
    cases.push_back(small_case("mha", 96, 96, 4, 4, 32));
    auto gqa = small_case("gqa", 80, 80, 8, 2, 16);
    cases.push_back(gqa);
    auto mqa = small_case("mqa", 70, 70, 4, 1, 16);
    mqa.causal = true;
    cases.push_back(mqa);
    auto cross = small_case("cross_causal", 50, 150, 2, 2, 16);
    cross.causal = true;
    cases.push_back(cross);
    auto longer_q = small_case("cross_causal_sq_gt_sk", 150, 50, 2, 1, 16);
    longer_q.causal = true;
    cases.push_back(longer_q);
    auto window = small_case("window", 150, 150, 2, 2, 16);
    window.window_left = 20;
    window.window_right = 5;
    cases.push_back(window);
    auto window_causal = small_case("window_causal", 150, 150, 2, 2, 16);
    window_causal.causal = true;
    window_causal.window_left = 33;
    cases.push_back(window_causal);
    auto segments = small_case("segments", 140, 140, 2, 2, 16);
    segments.segments = 5;
    segments.batch = 2;
    cases.push_back(segments);
    auto bias = small_case("bias", 60, 90, 4, 2, 16);
    bias.bias_shape = {1, 4, 60, 90};
    bias.bias_amplitude = 3.0;
    cases.push_back(bias);
    auto bias_rows = small_case("bias_broadcast", 60, 90, 4, 2, 16);
    bias_rows.batch = 2;
    bias_rows.bias_shape = {2, 1, 60, 1};
    cases.push_back(bias_rows);
    auto softcap = small_case("softcap", 100, 100, 2, 2, 32);
    softcap.softcap = 20.0;
    softcap.qk_amplitude = 6.0;
    cases.push_back(softcap);
    auto scale = small_case("scale", 64, 64, 2, 2, 24);
    scale.scale = 0.9;
    cases.push_back(scale);
    auto dv = small_case("head_dim_v", 64, 64, 2, 2, 24);
    dv.head_dim_v = 40;
    cases.push_back(dv);
    for (const auto &c : cases) {
        require_all_kernels_match(c);
        require_all_kernels_match(bf16(c));
    }
}

TEST_CASE("a fully masked row outputs zeros, never NaN", "[kernels][edge]") {
    // Sq > Sk with bottom-right causal alignment: the first Sq - Sk rows see no key.
    auto c = small_case("masked_rows", 40, 10, 2, 2, 8);
    c.causal = true;
    const CaseInputs in = generate_inputs(test_suite(), c);
    for (const auto &k : kAllKernels) {
        const auto out = run_kernel(k, c, in);
        for (int64_t i = 0; i < 30; ++i)
            for (int64_t d = 0; d < 8; ++d) REQUIRE(out[out_at(c, 0, i, 1, d)] == 0.0f);
        CHECK(out[out_at(c, 0, 30, 0, 0)] != 0.0f);
    }
    require_all_kernels_match(c);
}

TEST_CASE("segment ids that match nowhere mask the whole row", "[kernels][edge]") {
    // One segment per token with Sq == Sk: every row attends exactly its own key, so the
    // output equals V at that position.
    auto c = small_case("per_token", 130, 130, 2, 1, 8);
    c.segments_per_token = true;
    const CaseInputs in = generate_inputs(test_suite(), c);
    const auto ref = require_all_kernels_match(c);
    for (int64_t i = 0; i < c.seq_q; ++i)
        for (int64_t d = 0; d < 8; ++d) REQUIRE(ref[out_at(c, 0, i, 1, d)] == static_cast<double>(in.v[(i * 1 + 0) * 8 + d]));
}

TEST_CASE("decode: Sq = 1 with causal sees every key", "[kernels][edge]") {
    auto causal = small_case("decode", 1, 300, 8, 2, 32);
    causal.causal = true;
    auto open = causal;
    open.causal = false;
    const CaseInputs in = generate_inputs(test_suite(), causal);  // same id, same inputs
    for (const auto &k : kAllKernels) CHECK(run_kernel(k, causal, in) == run_kernel(k, open, in));
    require_all_kernels_match(causal);
    require_all_kernels_match(bf16(causal));
}

TEST_CASE("Sk = 1: the output is V itself", "[kernels][edge]") {
    auto c = small_case("sk1", 33, 1, 2, 2, 8);
    const CaseInputs in = generate_inputs(test_suite(), c);
    for (const auto &k : kAllKernels) {
        const auto out = run_kernel(k, c, in);
        for (int64_t i = 0; i < c.seq_q; ++i)
            for (int64_t d = 0; d < 8; ++d) REQUIRE(out[out_at(c, 0, i, 1, d)] == in.v[1 * 8 + d]);
    }
}

TEST_CASE("D = 1 and lengths that are not multiples of the block size", "[kernels][edge]") {
    require_all_kernels_match(small_case("d1", 77, 77, 2, 2, 1));
    for (int64_t s : {1, 63, 127, 129, 192, 320}) {  // S % 128 == 64 is where real kernels broke
        auto c = small_case("s" + std::to_string(s), s, s, 2, 2, 16);
        c.causal = true;
        require_all_kernels_match(c);
        require_all_kernels_match(bf16(c));
    }
}

TEST_CASE("a window wider than the sequence is no window at all", "[kernels][edge]") {
    auto wide = small_case("wide", 90, 90, 2, 2, 16);
    wide.window_left = 1000;
    wide.window_right = 1000;
    auto none = wide;
    none.window_left = none.window_right = -1;
    const CaseInputs in = generate_inputs(test_suite(), wide);
    for (const auto &k : kAllKernels) CHECK(run_kernel(k, wide, in) == run_kernel(k, none, in));
}

TEST_CASE("large logits (scores near 1e4) stay finite and correct", "[kernels][edge]") {
    auto c = small_case("large_logits", 128, 128, 2, 2, 64);
    c.qk_amplitude = 200.0;  // |q.k| * scale reaches ~1e4
    const CaseInputs in = generate_inputs(test_suite(), c);
    float max_score = 0.0f;
    for (int64_t j = 0; j < 128; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < 64; ++d) dot += in.q[d] * in.k[j * 2 * 64 + d];
        max_score = std::max(max_score, std::fabs(dot * c.effective_scale()));
    }
    CHECK(max_score > 5e3);
    const auto ref = require_all_kernels_match(c);
    for (double x : ref) REQUIRE(std::isfinite(x));
    require_all_kernels_match(bf16(c));
}

TEST_CASE("NaN in one input element propagates to exactly the outputs it feeds", "[kernels][edge]") {
    // K[b=0, j=20, hk=1, d=3] is NaN: every head that reads KV head 1 (heads 2, 3) gets a
    // NaN score for key 20, so the rows that allow key 20 are NaN in full; rows that mask it
    // (causal rows before 20) and the other heads stay finite.
    auto c = small_case("nan_k", 64, 64, 4, 2, 8);
    c.causal = true;
    c.nan = NanInjection{"k", {0, 20, 1, 3}};
    const CaseInputs in = generate_inputs(test_suite(), c);
    const auto ref = run_reference(c, in);
    for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 64; ++i) {
            const bool should_be_nan = h >= 2 && i >= 20;
            for (int64_t d = 0; d < 8; ++d) REQUIRE(std::isnan(ref[out_at(c, 0, i, h, d)]) == should_be_nan);
        }
    require_all_kernels_match(c);

    // V[0, 5, 0, 2] is NaN: only output dim 2 of rows that allow key 5 in heads 0, 1.
    auto v = small_case("nan_v", 32, 32, 4, 2, 8);
    v.causal = true;
    v.nan = NanInjection{"v", {0, 5, 0, 2}};
    const auto vref = run_reference(v, generate_inputs(test_suite(), v));
    for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 32; ++i)
            for (int64_t d = 0; d < 8; ++d) REQUIRE(std::isnan(vref[out_at(v, 0, i, h, d)]) == (h < 2 && i >= 5 && d == 2));
    require_all_kernels_match(v);
    require_all_kernels_match(bf16(v));
}

TEST_CASE("GQA equals MHA with K and V heads repeated", "[kernels]") {
    auto g = small_case("gqa_equiv", 40, 40, 6, 2, 8);
    const CaseInputs gin = generate_inputs(test_suite(), g);
    auto m = g;
    m.heads_kv = 6;
    CaseInputs min = gin;
    min.k.assign(static_cast<size_t>(40 * 6 * 8), 0.0f);
    min.v = min.k;
    for (int64_t j = 0; j < 40; ++j)
        for (int64_t h = 0; h < 6; ++h)
            for (int64_t d = 0; d < 8; ++d) {
                min.k[(j * 6 + h) * 8 + d] = gin.k[(j * 2 + h / 3) * 8 + d];
                min.v[(j * 6 + h) * 8 + d] = gin.v[(j * 2 + h / 3) * 8 + d];
            }
    for (const auto &k : kAllKernels) CHECK(run_kernel(k, g, gin) == run_kernel(k, m, min));
}

TEST_CASE("flash's block sizes change its output by no more than the tolerance", "[kernels][flash]") {
    auto c = small_case("sweep", 300, 300, 2, 2, 32);
    c.causal = true;
    c.segments = 3;
    for (const auto &cs : {c, bf16(c)}) {
        const CaseInputs in = generate_inputs(test_suite(), cs);
        const auto ref = run_reference(cs, in);
        const GoldenEntry g = calibrate(cs, in, ref);
        for (int64_t bq : {1, 16, 64, 128, 512})
            for (int64_t bk : {1, 16, 100, 128, 512}) {
                const auto out = run_kernel({"flash", bq, bk}, cs, in);
                INFO("block_q " << bq << " block_k " << bk);
                REQUIRE(golden_check(out, ref, g).verdict == Verdict::Pass);
            }
    }
}

TEST_CASE("flash's workspace does not grow with Sk; native's grows with Sq x Sk", "[kernels][memory]") {
    KernelRegistry reg = KernelRegistry::with_builtins();
    auto peak = [&](const char *name, int64_t sk) {
        auto c = small_case("mem", 64, sk, 1, 1, 16);
        const CaseInputs in = generate_inputs(test_suite(), c);
        std::vector<float> out(static_cast<size_t>(output_elements(c)));
        CountingAllocator alloc;
        const attngate_problem p = make_problem(c, in, out.data(), alloc.abi());
        const attngate_kernel *k = reg.find(name);
        char err[64];
        REQUIRE(k->run(k, &p, err, sizeof err) == 0);
        return alloc.peak_bytes();
    };
    CHECK(peak("flash", 256) == peak("flash", 4096));
    CHECK(peak("native", 4096) - peak("native", 256) >= 64 * (4096 - 256) * 4);
}
