// The f32 tile microkernels on AVX-512: 8 rows x 32 columns of accumulators in zmm
// registers. Only the code between the target pragmas uses AVX-512.
#include <cstdint>
#include <type_traits>

#include "tile_gemm.hpp"

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

struct Avx512Lanes {
    static constexpr int64_t N = 16, kRows = 8;
    using F = __m512;
    static F zero() { return _mm512_setzero_ps(); }
    static F load(const float *p) { return _mm512_loadu_ps(p); }
    static __mmask16 mask(int64_t n) { return n >= N ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1u); }
    static F load_n(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(mask(n), p); }
    static void store_n(float *p, F f, int64_t n) { _mm512_mask_storeu_ps(p, mask(n), f); }
    static F set1(float v) { return _mm512_set1_ps(v); }
    static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
};

#include "tile_gemm.inc"

}  // namespace

const TileGemm &tile_gemm_avx512() { return TileKernels<Avx512Lanes>::table(); }

}  // namespace attngate::kernels

#ifdef __clang__
#pragma clang attribute pop
#endif

#pragma GCC diagnostic pop
#pragma GCC pop_options
