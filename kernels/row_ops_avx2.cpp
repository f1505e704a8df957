// The row operations on AVX2 + FMA (8 lanes), with SLEEF's vector exp and tanh. Only the
// code between the target pragmas uses AVX2; the rest of the binary stays baseline.
#include <cstdint>

#include "row_ops.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>
// clang ignores GCC's target pragma; its own applies the same ISA to every function below.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

// SLEEF's vector exp and tanh (libsleef). sleef.h declares them only when the whole file
// is compiled with -mavx, which this file deliberately is not, so they are declared here.
extern "C" __m256 Sleef_expf8_u10avx2(__m256);
extern "C" __m256 Sleef_tanhf8_u10avx2(__m256);

namespace attngate::kernels {
namespace {

struct Avx2 {
    using F = __m256;
    static constexpr int N = 8;
    static F load(const float *p) { return _mm256_loadu_ps(p); }
    static void store(float *p, F v) { _mm256_storeu_ps(p, v); }
    static F set1(float x) { return _mm256_set1_ps(x); }
    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F div(F a, F b) { return _mm256_div_ps(a, b); }
    static F max_keep(F x, F m) { return _mm256_max_ps(x, m); }  // x NaN -> m (second operand)
    static F exp(F x) { return Sleef_expf8_u10avx2(x); }
    static F tanh(F x) { return Sleef_tanhf8_u10avx2(x); }
    static bool any_nan(F x) { return _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0; }
    static bool all_finite(F x) {
        const __m256i e = _mm256_set1_epi32(0x7f800000);
        const __m256i bits = _mm256_and_si256(_mm256_castps_si256(x), e);
        return _mm256_movemask_epi8(_mm256_cmpeq_epi32(bits, e)) == 0;
    }
    static float hmax(F v) {
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
        return _mm_cvtss_f32(m);
    }
    static float hsum(F v) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        return _mm_cvtss_f32(s);
    }
    /// Round to nearest even at bf16 precision, kept as float; NaN stays a quiet NaN.
    static F round_bf16(F x) {
        const __m256i u = _mm256_castps_si256(x);
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
        const __m256i rounded = _mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
        const __m256i quiet = _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)),
                                               _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
        const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        return _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan);
    }
    static F widen_bf16(const uint16_t *p) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
};

#include "row_ops_simd.inc"

}  // namespace

const RowOps &row_ops_avx2() { return SimdRows<Avx2>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC pop_options
