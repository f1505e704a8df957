// The flash-decode products on AVX2 + FMA (8 lanes). Only the code between the target
// pragmas uses AVX2; the rest of the binary stays baseline.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "attngate/bf16.hpp"
#include "decode_ops.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

namespace attngate::kernels {
namespace {

struct Avx2Decode {
    using F = __m256;
    static constexpr int64_t N = 8, kRows = 2, kPvChunks = 1;  // 16 registers: 8 accumulators, 4 of Q, 2 of K
    static F zero() { return _mm256_setzero_ps(); }
    static F load(const float *p) { return _mm256_loadu_ps(p); }
    static F load_n(const float *p, int64_t n) {
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes));
    }
    static void store(float *p, F v) { _mm256_storeu_ps(p, v); }
    static F set1(float x) { return _mm256_set1_ps(x); }
    static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    /// 16 bf16 (valid of them, zero past) as f32: the even elements, then the odd ones.
    static void widen_pair(const uint16_t *p, int64_t valid, F &even, F &odd) {
        __m256i x;
        if (valid >= 16) {
            x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
        } else {  // AVX2 has no 16-bit masked load: a zeroed copy of the tail
            alignas(32) uint16_t tail[16] = {};
            std::memcpy(tail, p, static_cast<size_t>(valid) * sizeof(uint16_t));
            x = _mm256_load_si256(reinterpret_cast<const __m256i *>(tail));
        }
        even = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
        odd = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
    }
    /// out[i] = the sum of acc[i]'s lanes, for 8 accumulators at once (three levels of
    /// shuffle-and-add); the input order makes lane i hold accumulator i.
    static void reduce(const F *acc, float *out) {
        static constexpr int kOrder[8] = {0, 2, 1, 3, 4, 6, 5, 7};
        F y[4], z[2];
        for (int i = 0; i < 4; ++i) {
            const F a = acc[kOrder[i]], b = acc[kOrder[i + 4]];
            y[i] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
        }
        for (int i = 0; i < 2; ++i)
            z[i] = _mm256_add_ps(_mm256_shuffle_ps(y[i], y[i + 2], 0x44), _mm256_shuffle_ps(y[i], y[i + 2], 0xEE));
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_shuffle_ps(z[0], z[1], 0x88), _mm256_shuffle_ps(z[0], z[1], 0xDD)));
    }
};

#include "decode_ops.inc"

}  // namespace

const DecodeOps &decode_ops_avx2() { return DecodeKernels<Avx2Decode>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC pop_options
