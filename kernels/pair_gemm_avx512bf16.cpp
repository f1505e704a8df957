// The pair-packed microkernels on AVX-512 BF16: vdpbf16ps multiplies 16 pairs of bf16
// and adds both products into 16 f32 lanes, twice the f32 FMA rate. Only the code between
// the target pragmas uses AVX-512; the rest of the binary stays baseline.
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "bf16_pairs.hpp"

#pragma GCC push_options
// g++ 12's avx512fintrin.h seeds unmasked intrinsics with _mm512_undefined_*(), which its own
// -Wuninitialized then reports (GCC bug 105593); the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include <immintrin.h>
// clang ignores GCC's target pragma; its own applies the same ISA to every function below.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"))), apply_to = function)
#endif

namespace attngate::kernels {
namespace {

struct Avx512Bf16Lanes {
    using F = __m512;
    using W = __m512i;
    static F zero() { return _mm512_setzero_ps(); }
    static W load_w(const uint32_t *p) { return _mm512_loadu_si512(p); }
    static W set1_w(uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }
    static __mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }
    static F load_f(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
    static void store_f(float *p, F f, int64_t n) { _mm512_mask_storeu_ps(p, first(n), f); }
    static F dot(F acc, W a, W b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }
};

#include "pair_gemm.inc"

constexpr int kChains = 12;  // independent accumulators: enough to cover either latency

/// Seconds for `steps` x kChains instructions `op(accumulator, operand)` on independent
/// accumulators; the operand passes through an empty asm each step, so the compiler can
/// neither fold the loop nor spill an accumulator to memory (a chain through memory would
/// time store forwarding, not the instruction).
template <typename Op>
double time_chains(int64_t steps, __m512 operand, Op op) {
    __m512 c[kChains];
    for (auto &x : c) x = _mm512_setzero_ps();
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < steps; ++k) {
        #pragma GCC unroll 12
        for (auto &x : c) x = op(x, operand);
        __asm__ volatile("" : "+v"(operand));
    }
    const auto t1 = std::chrono::steady_clock::now();
    __m512 sum = c[0];
    for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, c[i]);
    volatile float sink = _mm512_reduce_add_ps(sum);
    (void)sink;
    return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

const PairGemm &pair_gemm_avx512bf16() { return PairKernels<Avx512Bf16Lanes>::table(); }

double vdpbf16ps_flop_ratio() {
    const __m512 pairs = _mm512_castsi512_ps(_mm512_set1_epi32(0x3f803f80));  // bf16 1.0, twice
    const __m512bh b = (__m512bh)_mm512_set1_epi32(0x3c003c00);
    const __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0.0078125f);
    constexpr int64_t kSteps = 20000;  // 240k instructions: about 0.1 ms each
    double dot = 1e30, fma = 1e30;
    for (int round = 0; round < 5; ++round) {  // the best of five, interleaved: a preemption only slows one
        dot = std::min(dot, time_chains(kSteps, pairs, [&](__m512 c, __m512 a) { return _mm512_dpbf16_ps(c, (__m512bh)a, b); }));
        fma = std::min(fma, time_chains(kSteps, x, [&](__m512 c, __m512 a) { return _mm512_fmadd_ps(a, y, c); }));
    }
    // vdpbf16ps: 16 lanes x 2 products x 2 FLOPs; vfmadd231ps: 16 lanes x 2 FLOPs.
    return (64.0 / dot) / (32.0 / fma);
}

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC diagnostic pop
#pragma GCC pop_options
