// The f32 tile microkernels on AVX2 + FMA: 6 rows x 16 columns of accumulators in ymm
// registers. Only the code between the target pragmas uses AVX2.
#include <cstdint>
#include <type_traits>

#include "tile_gemm.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>
// clang ignores GCC's target pragma; its own applies the same ISA to every function below.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

namespace attngate::kernels {
namespace {

struct Avx2Lanes {
    static constexpr int64_t N = 8, kRows = 6;
    using F = __m256;
    static F zero() { return _mm256_setzero_ps(); }
    static F load(const float *p) { return _mm256_loadu_ps(p); }
    static __m256i mask(int64_t n) {
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < N ? n : N)), lanes);
    }
    static F load_n(const float *p, int64_t n) { return n >= N ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n)); }
    static void store_n(float *p, F f, int64_t n) {
        if (n >= N) _mm256_storeu_ps(p, f);
        else _mm256_maskstore_ps(p, mask(n), f);
    }
    static F set1(float v) { return _mm256_set1_ps(v); }
    static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
};

#include "tile_gemm.inc"

}  // namespace

const TileGemm &tile_gemm_avx2() { return TileKernels<Avx2Lanes>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC pop_options
