// flash and native on their fast paths: every feature against the fp64 reference on the
// portable and the dispatched instruction-set path, single-threaded and on a thread pool
// from init, and the same bits whatever the thread count.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "attngate/kernel_tools.hpp"
#include "kernel_oracle.hpp"
#include "backend/kernel_registry.hpp"
#include "test_support.hpp"

using namespace attngate;
using test::Instance;
using test::PathScope;
using test::kernel;
using test::small_case;

namespace {

std::vector<float> run(const attngate_kernel *k, const CaseSpec &c, const CaseInputs &in, void *instance,
                       int64_t block = 0) {
    std::vector<float> out(static_cast<size_t>(output_elements(c)), -777.0f);
    CountingAllocator alloc;
    attngate_problem p = make_problem(c, in, out.data(), alloc.abi(), block, block);
    p.instance = instance;
    char err[256] = {0};
    REQUIRE(k->run(k, &p, err, sizeof err) == 0);
    CHECK(alloc.live_bytes() == 0);
    return out;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<CaseSpec> feature_cases() {
    std::vector<CaseSpec> cases;
    cases.push_back(small_case("mha_multi_block", 300, 300, 3, 3, 32));
    auto gqa = small_case("gqa_causal", 260, 260, 6, 2, 16);
    gqa.causal = true;
    cases.push_back(gqa);
    auto mqa = small_case("mqa_decode", 1, 700, 4, 1, 64);
    mqa.causal = true;
    cases.push_back(mqa);
    auto cross = small_case("cross_causal_top_left", 200, 330, 2, 2, 16);
    cross.causal = true;
    cross.top_left = true;
    cases.push_back(cross);
    auto longer_q = small_case("sq_gt_sk_causal", 330, 140, 2, 1, 16);
    longer_q.causal = true;
    cases.push_back(longer_q);
    auto window = small_case("window", 290, 290, 2, 2, 16);
    window.window_left = 40;
    window.window_right = 9;
    cases.push_back(window);
    auto segments = small_case("segments_causal", 270, 270, 2, 2, 16);
    segments.causal = true;
    segments.segments = 4;
    segments.batch = 2;
    cases.push_back(segments);
    auto bias = small_case("bias_full", 140, 200, 4, 2, 16);
    bias.bias_shape = {1, 4, 140, 200};
    bias.bias_amplitude = 3.0;
    cases.push_back(bias);
    auto bias_rows = small_case("bias_rows", 140, 200, 4, 2, 16);
    bias_rows.batch = 2;
    bias_rows.bias_shape = {2, 1, 140, 1};
    cases.push_back(bias_rows);
    auto softcap = small_case("softcap", 200, 200, 2, 2, 32);
    softcap.softcap = 20.0;
    softcap.qk_amplitude = 6.0;
    cases.push_back(softcap);
    auto dv = small_case("dv_differs", 150, 170, 2, 2, 24);
    dv.head_dim_v = 40;
    cases.push_back(dv);
    auto nan_v = small_case("nan_v_causal", 200, 200, 2, 1, 8);
    nan_v.causal = true;
    nan_v.nan = NanInjection{"v", {0, 150, 0, 2}};
    cases.push_back(nan_v);
    auto nan_k = small_case("nan_k", 150, 150, 2, 2, 8);
    nan_k.causal = true;
    nan_k.nan = NanInjection{"k", {0, 20, 1, 3}};
    cases.push_back(nan_k);
    auto masked_rows = small_case("masked_rows", 200, 50, 2, 2, 8);
    masked_rows.causal = true;
    cases.push_back(masked_rows);
    return cases;
}

CaseSpec as_bf16(CaseSpec c) {
    c.dtype = ATTNGATE_DTYPE_BF16;
    c.id += "_bf16";
    return c;
}

}  // namespace

TEST_CASE("flash and native match the reference on every path, single- and multi-threaded", "[kernels][fast]") {
    const std::string best = kernels::detected_path();
    for (const char *name : {"flash", "native"}) {
        const attngate_kernel *k = kernel(name);
        const Instance one(k, 1), three(k, 3);
        for (const auto &f32 : feature_cases()) {
            for (const CaseSpec &c : {f32, as_bf16(f32)}) {
                const CaseInputs in = generate_inputs(test::kernel_test_suite(), c);
                const auto ref = test::run_reference(c, in);
                const GoldenEntry g = test::calibrate(c, in, ref);
                for (const std::string &path : {std::string("portable"), best}) {
                    const PathScope scope(path);
                    const auto single = run(k, c, in, nullptr);
                    const CheckResult r = golden_check(single, ref, g);
                    INFO(name << " on " << c.id << ", path " << path << ": " << r.reason);
                    REQUIRE(r.verdict == Verdict::Pass);
                    // Tasks never depend on the thread that runs them: identical bits.
                    CHECK(same_bits(run(k, c, in, one.get()), single));
                    CHECK(same_bits(run(k, c, in, three.get()), single));
                    if (std::string(name) == "flash") {
                        const auto small_blocks = run(k, c, in, three.get(), 48);
                        REQUIRE(golden_check(small_blocks, ref, g).verdict == Verdict::Pass);
                    }
                }
            }
        }
    }
}

/// Puts flash's bf16 products on one route for a scope.
class ProductsScope {
public:
    explicit ProductsScope(kernels::Bf16Products how) { kernels::set_bf16_products(how); }
    ~ProductsScope() { kernels::set_bf16_products(kernels::Bf16Products::Measured); }
};

TEST_CASE("flash's vdpbf16ps path matches the reference (emulated lanes on any CPU)", "[kernels][fast][bf16]") {
    // The AVX-512 BF16 microkernels' packing and loops, with each vdpbf16ps computed in
    // plain C++; on a CPU with AVX-512 BF16 the instruction itself runs too, whichever
    // route the measured default takes there, and gives the emulation's bits.
    const bool has_instruction = kernels::detected_path() == "avx512bf16";
    const attngate_kernel *k = kernel("flash");
    const Instance three(k, 3);
    for (const auto &f32 : feature_cases()) {
        const CaseSpec c = as_bf16(f32);
        const CaseInputs in = generate_inputs(test::kernel_test_suite(), c);
        const auto ref = test::run_reference(c, in);
        const GoldenEntry g = test::calibrate(c, in, ref);
        for (int64_t block : {0, 48, 7}) {
            std::vector<float> single;
            {
                const ProductsScope emulated(kernels::Bf16Products::Emulated);
                single = run(k, c, in, nullptr, block);
                const CheckResult r = golden_check(single, ref, g);
                INFO(c.id << " block " << block << ": " << r.reason);
                REQUIRE(r.verdict == Verdict::Pass);
                CHECK(same_bits(run(k, c, in, three.get(), block), single));
            }
            if (has_instruction) {
                const ProductsScope instruction(kernels::Bf16Products::Vdpbf16ps);
                INFO(c.id << " block " << block << " on vdpbf16ps");
                CHECK(same_bits(run(k, c, in, nullptr, block), single));
                CHECK(same_bits(run(k, c, in, three.get(), block), single));
            }
        }
    }
}

TEST_CASE("flash's bf16 products: the route is named, and forcing one takes it", "[kernels][fast][bf16]") {
    {
        const ProductsScope widened(kernels::Bf16Products::Widened);
        CHECK(kernels::bf16_products().rfind("widened to f32", 0) == 0);
    }
    if (kernels::detected_path() != "avx512bf16") {
        CHECK(kernels::bf16_products() == "widened to f32, f32 FMA (no AVX-512 BF16 on this path)");
        return;
    }
    const std::string measured = kernels::bf16_products();
    INFO(measured);
    CHECK(measured.find("vdpbf16ps retires ") != std::string::npos);
    const ProductsScope instruction(kernels::Bf16Products::Vdpbf16ps);
    CHECK(kernels::bf16_products().rfind("vdpbf16ps (ATTNGATE_BF16_PRODUCTS=vdpbf16ps", 0) == 0);
}

TEST_CASE("a key masked by a -inf bias keeps its NaN value out of the output", "[kernels][fast][edge]") {
    auto c = small_case("minus_inf_bias", 64, 64, 1, 1, 8);
    c.bias_shape = {1, 1, 1, 64};
    CaseInputs in = generate_inputs(test::kernel_test_suite(), c);
    in.bias[10] = -std::numeric_limits<float>::infinity();
    in.v[10 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
    const auto ref = test::run_reference(c, in);
    for (double x : ref) REQUIRE(std::isfinite(x));
    for (const char *name : {"flash", "native"}) {
        const Instance two(kernel(name), 2);
        for (const auto &out : {run(kernel(name), c, in, nullptr), run(kernel(name), c, in, two.get())})
            for (size_t i = 0; i < out.size(); ++i) REQUIRE(std::fabs(out[i] - ref[i]) < 1e-5);
    }
}

TEST_CASE("flash's workspace stays constant in S on a thread pool too", "[kernels][fast][memory]") {
    const attngate_kernel *k = kernel("flash");
    const Instance pool(k, 3);
    auto peak = [&](int64_t s) {
        auto c = small_case("mem", s, s, 2, 2, 32);
        const CaseInputs in = generate_inputs(test::kernel_test_suite(), c);
        std::vector<float> out(static_cast<size_t>(output_elements(c)));
        CountingAllocator alloc;
        attngate_problem p = make_problem(c, in, out.data(), alloc.abi());
        p.instance = pool.get();
        char err[64];
        REQUIRE(k->run(k, &p, err, sizeof err) == 0);
        return alloc.peak_bytes();
    };
    CHECK(peak(512) == peak(2048));
}

TEST_CASE("init with num_threads <= 0 takes every CPU and free releases it", "[kernels][fast]") {
    for (const char *name : {"flash", "native"}) {
        const attngate_kernel *k = kernel(name);
        REQUIRE(k->init);
        REQUIRE(k->free);
        for (int threads : {0, -1, 4}) {
            const Instance inst(k, threads);
            auto c = small_case("init", 130, 130, 2, 2, 16);
            const CaseInputs in = generate_inputs(test::kernel_test_suite(), c);
            CHECK(same_bits(run(k, c, in, inst.get()), run(k, c, in, nullptr)));
        }
    }
    CHECK(kernels::default_threads() >= 1);
}
