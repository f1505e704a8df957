// The pair-packed microkernels on AVX-512 BF16: vdpbf16ps multiplies 16 pairs of bf16
// and adds both products into 16 f32 lanes, twice the f32 FMA rate. Only the code between
// the target pragmas uses AVX-512; the rest of the binary stays baseline.
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

}  // namespace

const PairGemm &pair_gemm_avx512bf16() { return PairKernels<Avx512Bf16Lanes>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC diagnostic pop
#pragma GCC pop_options
