// The portable f32 tile microkernels (plain C++ lanes) and the K^T packing every path
// shares, plus the dispatch from a path to its table.
#include <cstring>

#include "attngate/bf16.hpp"
#include "tile_gemm.hpp"

namespace attngate::kernels {
namespace {

struct PortableLanes {
    static constexpr int64_t N = 8, kRows = 4;
    struct F {
        float x[N];
    };
    static F zero() { return F{}; }
    static F load(const float *p) {
        F f;
        std::memcpy(f.x, p, sizeof f.x);
        return f;
    }
    static F load_n(const float *p, int64_t n) {
        F f{};
        for (int64_t i = 0; i < N && i < n; ++i) f.x[i] = p[i];
        return f;
    }
    static void store_n(float *p, const F &f, int64_t n) {
        for (int64_t i = 0; i < N && i < n; ++i) p[i] = f.x[i];
    }
    static F set1(float v) {
        F f;
        for (float &x : f.x) x = v;
        return f;
    }
    static F fma(const F &a, const F &b, F c) {
        for (int64_t i = 0; i < N; ++i) c.x[i] = c.x[i] + a.x[i] * b.x[i];  // no contraction: -ffp-contract=off
        return c;
    }
};

#include "tile_gemm.inc"

}  // namespace

const TileGemm &tile_gemm_portable() { return TileKernels<PortableLanes>::table(); }

const TileGemm &tile_gemm(Isa isa) {
    switch (isa) {
    case Isa::Avx512Bf16:
    case Isa::Avx512: return tile_gemm_avx512();
    case Isa::Avx2: return tile_gemm_avx2();
    case Isa::Portable: break;
    }
    return tile_gemm_portable();
}

void pack_kt(const float *k, int64_t n, int64_t d, int64_t stride, int64_t ld, float *kt) {
    for (int64_t p = 0; p < d; ++p) std::memset(kt + p * ld + n, 0, static_cast<size_t>(ld - n) * sizeof(float));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < d; ++p) kt[p * ld + j] = k[j * stride + p];
}

void pack_kt_bf16(const uint16_t *k, int64_t n, int64_t d, int64_t stride, int64_t ld, float *kt) {
    for (int64_t p = 0; p < d; ++p) std::memset(kt + p * ld + n, 0, static_cast<size_t>(ld - n) * sizeof(float));
    for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < d; ++p) kt[p * ld + j] = bf16_to_float(k[j * stride + p]);
}

}  // namespace attngate::kernels
