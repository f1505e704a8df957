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

/// Transposes each panel in blocks of 8 keys: 8 read streams along D, 8 contiguous floats
/// written per row of the panel.
template <typename T, typename Widen>
void pack_transposed(const T *k, int64_t n, int64_t d, int64_t stride, float *kt, Widen widen) {
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
        float *panel = kt + (j0 / kPanel) * d * kPanel;
        const int64_t w = n - j0 < kPanel ? n - j0 : kPanel;
        if (w < kPanel)
            for (int64_t p = 0; p < d; ++p) std::memset(panel + p * kPanel + w, 0, static_cast<size_t>(kPanel - w) * sizeof(float));
        int64_t j = 0;
        for (; j + 8 <= w; j += 8) {
            const T *rows[8];
            for (int64_t r = 0; r < 8; ++r) rows[r] = k + (j0 + j + r) * stride;
            for (int64_t p = 0; p < d; ++p)
                for (int64_t r = 0; r < 8; ++r) panel[p * kPanel + j + r] = widen(rows[r][p]);
        }
        for (; j < w; ++j)
            for (int64_t p = 0; p < d; ++p) panel[p * kPanel + j] = widen(k[(j0 + j) * stride + p]);
    }
}

template <typename T, typename Widen>
bool pack_panels(const T *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv, Widen widen) {
    uint32_t bad = 0;  // an all-ones exponent field means NaN or infinity
    for (int64_t e0 = 0; e0 < dv; e0 += kPanel) {
        float *panel = vp + (e0 / kPanel) * nv * kPanel;
        const int64_t w = dv - e0 < kPanel ? dv - e0 : kPanel;
        for (int64_t j = 0; j < n; ++j) {
            const T *row = v + j * stride + e0;
            float *out = panel + j * kPanel;
            for (int64_t e = 0; e < w; ++e) {
                out[e] = widen(row[e]);
                bad |= static_cast<uint32_t>((std::bit_cast<uint32_t>(out[e]) & 0x7f800000u) == 0x7f800000u);
            }
            for (int64_t e = w; e < kPanel; ++e) out[e] = 0.0f;
        }
    }
    return bad == 0;
}

}  // namespace

bool pack_v(const float *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv) {
    return pack_panels(v, n, dv, stride, vp, nv, [](float x) { return x; });
}

bool pack_v_bf16(const uint16_t *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv) {
    return pack_panels(v, n, dv, stride, vp, nv, [](uint16_t x) { return bf16_to_float(x); });
}

void pack_kt(const float *k, int64_t n, int64_t d, int64_t stride, float *kt) {
    pack_transposed(k, n, d, stride, kt, [](float x) { return x; });
}

void pack_kt_bf16(const uint16_t *k, int64_t n, int64_t d, int64_t stride, float *kt) {
    pack_transposed(k, n, d, stride, kt, [](uint16_t x) { return bf16_to_float(x); });
}

}  // namespace attngate::kernels
