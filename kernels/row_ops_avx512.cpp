// The row operations on AVX-512 F/BW/DQ/VL (16 lanes), with SLEEF's vector exp and tanh.
// Only the code between the target pragmas uses AVX-512; the rest stays baseline.
#include <cstdint>

#include "row_ops.hpp"

#pragma GCC push_options
// g++ 12's avx512fintrin.h seeds unmasked intrinsics with _mm512_undefined_*(), which its own
// -Wuninitialized then reports (GCC bug 105593); the values are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")
#include <immintrin.h>
// clang ignores GCC's target pragma; its own applies the same ISA to every function below.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))), apply_to = function)
#endif

// SLEEF's vector exp and tanh (libsleef). sleef.h declares them only when the whole file
// is compiled with -mavx512f, which this file deliberately is not, so they are declared here.
extern "C" __m512 Sleef_expf16_u10avx512f(__m512);
extern "C" __m512 Sleef_tanhf16_u10avx512f(__m512);

namespace attngate::kernels {
namespace {

struct Avx512 {
    using F = __m512;
    static constexpr int N = 16;
    static F load(const float *p) { return _mm512_loadu_ps(p); }
    static void store(float *p, F v) { _mm512_storeu_ps(p, v); }
    static F set1(float x) { return _mm512_set1_ps(x); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F div(F a, F b) { return _mm512_div_ps(a, b); }
    // vmaxps keeps the second operand when either is NaN; the mask form states it plainly.
    static F max_keep(F x, F m) { return _mm512_mask_max_ps(m, _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x, m); }
    static F exp(F x) { return Sleef_expf16_u10avx512f(x); }
    static F tanh(F x) { return Sleef_tanhf16_u10avx512f(x); }
    static bool any_nan(F x) { return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) != 0; }
    static bool all_finite(F x) {
        const __m512i e = _mm512_set1_epi32(0x7f800000);
        return _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x), e), e) == 0;
    }
    static float hmax(F v) { return _mm512_reduce_max_ps(v); }
    static float hsum(F v) {
        // A fixed pairwise order (not _mm512_reduce_add_ps, whose order is the compiler's).
        const __m256 lo = _mm512_castps512_ps256(v);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        __m256 s8 = _mm256_add_ps(lo, hi);
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        return _mm_cvtss_f32(s);
    }
    static F round_bf16(F x) {
        const __m512i u = _mm512_castps_si512(x);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
        const __m512i hi16 = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
        const __m512i rounded = _mm512_and_si512(r, hi16);
        const __m512i quiet = _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)), hi16);
        const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        return _mm512_castsi512_ps(_mm512_mask_blend_epi32(nan, rounded, quiet));
    }
    static F widen_bf16(const uint16_t *p) {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
};

#include "row_ops_simd.inc"

}  // namespace

const RowOps &row_ops_avx512() { return SimdRows<Avx512>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC diagnostic pop
#pragma GCC pop_options
