// The pair-packed microkernels over plain C++ lanes (what vdpbf16ps computes), and the
// packing of bf16 operands into pairs. The emulation lets any CPU run the AVX-512 BF16
// path's loops and packing in the tests.
#include <bit>
#include <cstring>

#include "bf16_pairs.hpp"

namespace attngate::kernels {
namespace {

struct EmulatedLanes {
    struct F {
        float x[16];
    };
    struct W {
        uint32_t x[16];
    };
    static F zero() { return F{}; }
    static W load_w(const uint32_t *p) {
        W w;
        std::memcpy(w.x, p, sizeof w.x);
        return w;
    }
    static W set1_w(uint32_t v) {
        W w;
        for (uint32_t &x : w.x) x = v;
        return w;
    }
    static F load_f(const float *p, int64_t n) {
        F f{};
        for (int64_t i = 0; i < 16 && i < n; ++i) f.x[i] = p[i];
        return f;
    }
    static void store_f(float *p, const F &f, int64_t n) {
        for (int64_t i = 0; i < 16 && i < n; ++i) p[i] = f.x[i];
    }
    static float lo(uint32_t w) { return std::bit_cast<float>(w << 16); }
    static float hi(uint32_t w) { return std::bit_cast<float>(w & 0xffff0000u); }
    /// Intel's pseudocode of vdpbf16ps: the odd product first, then the even one; each
    /// bf16 x bf16 product is exact in f32. (It also flushes subnormals; not modelled.)
    static F dot(F acc, const W &a, const W &b) {
        for (int i = 0; i < 16; ++i) {
            const float t = acc.x[i] + hi(a.x[i]) * hi(b.x[i]);
            acc.x[i] = t + lo(a.x[i]) * lo(b.x[i]);
        }
        return acc;
    }
};

#include "pair_gemm.inc"

uint32_t pair(uint16_t even, uint16_t odd) { return static_cast<uint32_t>(even) | static_cast<uint32_t>(odd) << 16; }

}  // namespace

const PairGemm &pair_gemm_emulated() { return PairKernels<EmulatedLanes>::table(); }

void pack_row_pairs(const uint16_t *src, int64_t rows, int64_t dim, int64_t stride, uint32_t *out) {
    const int64_t d2 = (dim + 1) / 2;
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t *x = src + r * stride;
        for (int64_t p = 0; p < d2; ++p) out[r * d2 + p] = pair(x[2 * p], 2 * p + 1 < dim ? x[2 * p + 1] : 0);
    }
}

void pack_float_row_pairs(const float *src, int64_t rows, int64_t n, int64_t stride, uint32_t *out) {
    const int64_t n2 = (n + 1) / 2;
    auto bits = [](float f) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16); };  // exact: f is bf16
    for (int64_t r = 0; r < rows; ++r) {
        const float *x = src + r * stride;
        for (int64_t p = 0; p < n2; ++p) out[r * n2 + p] = pair(bits(x[2 * p]), 2 * p + 1 < n ? bits(x[2 * p + 1]) : 0);
    }
}

void pack_k_pairs(const uint16_t *src, int64_t n, int64_t dim, int64_t stride, int64_t ld, uint32_t *out) {
    const int64_t d2 = (dim + 1) / 2;
    for (int64_t p = 0; p < d2; ++p) std::memset(out + p * ld + n, 0, static_cast<size_t>(ld - n) * sizeof(uint32_t));
    for (int64_t j = 0; j < n; ++j) {
        const uint16_t *x = src + j * stride;
        for (int64_t p = 0; p < d2; ++p) out[p * ld + j] = pair(x[2 * p], 2 * p + 1 < dim ? x[2 * p + 1] : 0);
    }
}

void pack_v_pairs(const uint16_t *src, int64_t n, int64_t dim, int64_t stride, int64_t ld, uint32_t *out) {
    const int64_t n2 = (n + 1) / 2;
    for (int64_t p = 0; p < n2; ++p) {
        const uint16_t *even = src + 2 * p * stride;
        const uint16_t *odd = 2 * p + 1 < n ? even + stride : nullptr;
        uint32_t *o = out + p * ld;
        for (int64_t e = 0; e < dim; ++e) o[e] = pair(even[e], odd ? odd[e] : 0);
        std::memset(o + dim, 0, static_cast<size_t>(ld - dim) * sizeof(uint32_t));
    }
}

bool bf16_rows_finite(const uint16_t *src, int64_t rows, int64_t dim, int64_t stride) {
    uint16_t all_ones = 0;  // any value with an all-ones exponent is NaN or infinite
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t *x = src + r * stride;
        for (int64_t e = 0; e < dim; ++e) all_ones |= static_cast<uint16_t>((x[e] & 0x7f80u) == 0x7f80u);
    }
    return all_ones == 0;
}

}  // namespace attngate::kernels
