// The flash-decode products on AVX-512 F/BW (16 lanes). Only the code between the target
// pragmas uses AVX-512; the rest of the binary stays baseline.
#include <algorithm>
#include <cstdint>

#include "attngate/bf16.hpp"
#include "decode_ops.hpp"

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

namespace attngate::kernels {
namespace {

struct Avx512Decode {
    using F = __m512;
    static constexpr int64_t N = 16, kRows = 4, kPvChunks = 2;
    static F zero() { return _mm512_setzero_ps(); }
    static F load(const float *p) { return _mm512_loadu_ps(p); }
    static F load_n(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1u), p); }
    static void store(float *p, F v) { _mm512_storeu_ps(p, v); }
    static F set1(float x) { return _mm512_set1_ps(x); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    /// 32 bf16 (valid of them, zero past) as f32: the even elements, then the odd ones.
    static void widen_pair(const uint16_t *p, int64_t valid, F &even, F &odd) {
        const __m512i x = valid >= 32 ? _mm512_loadu_si512(p)
                                      : _mm512_maskz_loadu_epi16(static_cast<__mmask32>((uint64_t{1} << valid) - 1u), p);
        even = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
        odd = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    }
    /// out[i] = the sum of acc[i]'s lanes, for 16 accumulators at once: four levels of
    /// shuffle-and-add (45 instructions, not 16 reductions of 8). The input order makes lane i
    /// hold accumulator i (tests/unit/decode_ops_test.cpp checks it against plain sums).
    static void reduce(const F *acc, float *out) {
        static constexpr int kOrder[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};
        F y[8], z[4], w[2];
        for (int i = 0; i < 8; ++i) {
            const F a = acc[kOrder[i]], b = acc[kOrder[i + 8]];
            y[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
        }
        for (int i = 0; i < 4; ++i)
            z[i] = _mm512_add_ps(_mm512_shuffle_f32x4(y[i], y[i + 4], 0x88), _mm512_shuffle_f32x4(y[i], y[i + 4], 0xDD));
        for (int i = 0; i < 2; ++i)
            w[i] = _mm512_add_ps(_mm512_shuffle_ps(z[i], z[i + 2], 0x44), _mm512_shuffle_ps(z[i], z[i + 2], 0xEE));
        _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD)));
    }
};

#include "decode_ops.inc"

}  // namespace

const DecodeOps &decode_ops_avx512() { return DecodeKernels<Avx512Decode>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC diagnostic pop
#pragma GCC pop_options
