// The portable f32 tile microkernels (plain C++ lanes) and the K^T packing every path
// shares, plus the dispatch from a path to its table.
#include <bit>
#include <cstring>
#include <type_traits>

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

namespace {

/// Transposes in blocks of 8 keys: 8 read streams along D, one contiguous write of 8 per
/// row of kt, so neither side walks a whole column at a time.
template <typename T, typename Widen>
void pack_transposed(const T *k, int64_t n, int64_t d, int64_t stride, int64_t ld, float *kt, bool pad, Widen widen) {
    if (pad)
        for (int64_t p = 0; p < d; ++p) std::memset(kt + p * ld + n, 0, static_cast<size_t>(ld - n) * sizeof(float));
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const T *rows[8];
        for (int64_t r = 0; r < 8; ++r) rows[r] = k + (j + r) * stride;
        for (int64_t p = 0; p < d; ++p)
            for (int64_t r = 0; r < 8; ++r) kt[p * ld + j + r] = widen(rows[r][p]);
    }
    for (; j < n; ++j)
        for (int64_t p = 0; p < d; ++p) kt[p * ld + j] = widen(k[j * stride + p]);
}

}  // namespace

namespace {

template <typename T, typename Widen>
bool pack_panels(const T *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv, Widen widen) {
    uint32_t exp_max = 0;  // the largest exponent field seen: all ones means NaN or infinity
    for (int64_t e0 = 0; e0 < dv; e0 += kPanel) {
        float *panel = vp + (e0 / kPanel) * nv * kPanel;
        const int64_t w = dv - e0 < kPanel ? dv - e0 : kPanel;
        for (int64_t j = 0; j < n; ++j) {
            const T *row = v + j * stride + e0;
            float *out = panel + j * kPanel;
            for (int64_t e = 0; e < w; ++e) {
                out[e] = widen(row[e]);
                const uint32_t bits = std::bit_cast<uint32_t>(out[e]) & 0x7f800000u;
                exp_max = bits > exp_max ? bits : exp_max;
            }
            for (int64_t e = w; e < kPanel; ++e) out[e] = 0.0f;
        }
    }
    return exp_max != 0x7f800000u;
}

}  // namespace

bool pack_v(const float *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv) {
    return pack_panels(v, n, dv, stride, vp, nv, [](float x) { return x; });
}

bool pack_v_bf16(const uint16_t *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv) {
    return pack_panels(v, n, dv, stride, vp, nv, [](uint16_t x) { return bf16_to_float(x); });
}

void pack_kt(const float *k, int64_t n, int64_t d, int64_t stride, int64_t ld, float *kt, bool pad) {
    pack_transposed(k, n, d, stride, ld, kt, pad, [](float x) { return x; });
}

void pack_kt_bf16(const uint16_t *k, int64_t n, int64_t d, int64_t stride, int64_t ld, float *kt, bool pad) {
    pack_transposed(k, n, d, stride, ld, kt, pad, [](uint16_t x) { return bf16_to_float(x); });
}

}  // namespace attngate::kernels
