// The two tile products of the fast kernels in f32 (S = Q K^T and acc += P V), written as
// register-tiled FMA microkernels per instruction-set path, over operands the kernels
// pack into their own (harness-counted) workspace.
#pragma once

#include <cstdint>

#include "cpu_dispatch.hpp"

namespace attngate::kernels {

struct TileGemm {
    /// s[m x n] (row stride lds) = Q . K^T: q [m][d] (row stride ldq), kt = K transposed in
    /// panels of kPanel columns (pack_kt), whole panels (the padding is read, not stored).
    void (*qk)(int64_t m, int64_t n, int64_t d, const float *q, int64_t ldq, const float *kt, float *s, int64_t lds);
    /// acc[m x dv] (row stride ldc) += P . V: p [m][n] (row stride ldp), vp = V in panels
    /// of kPanel columns (pack_v) of nv >= n rows.
    void (*pv)(int64_t m, int64_t dv, int64_t n, const float *p, int64_t ldp, const float *vp, int64_t nv, float *acc,
               int64_t ldc);
};

/// The table of a path (portable: plain C++ lanes, no FMA contraction).
const TileGemm &tile_gemm(Isa isa);
const TileGemm &tile_gemm_portable();
const TileGemm &tile_gemm_avx2();
const TileGemm &tile_gemm_avx512();

/// V is packed in panels of kPanel columns, [ceil(dv / kPanel)][n][kPanel], zero-padded:
/// the microkernels then read each row's slice from one cache line pair instead of rows
/// H x Dv floats apart (which map to the same L1 sets).
inline constexpr int64_t kPanel = 32;
inline int64_t v_panel_floats(int64_t n, int64_t dv) { return (dv + kPanel - 1) / kPanel * kPanel * n; }
/// Element (j, e) of a panel-packed V of n rows.
inline float v_panel_at(const float *vp, int64_t n, int64_t j, int64_t e) {
    return vp[(e / kPanel) * n * kPanel + j * kPanel + e % kPanel];
}

/// Packs V rows (n rows of dv, row stride `stride`) as rows [0, n) of panels of nv >= n
/// rows; returns false when any value is NaN or infinite.
bool pack_v(const float *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv);
bool pack_v_bf16(const uint16_t *v, int64_t n, int64_t dv, int64_t stride, float *vp, int64_t nv);

/// Floats of a K^T of n keys in panels: [ceil(n / kPanel)][d][kPanel]. Like V, K^T goes in
/// panels so that a column tile's rows are one contiguous run, not rows n floats apart.
inline int64_t kt_panel_floats(int64_t n, int64_t d) { return (n + kPanel - 1) / kPanel * kPanel * d; }

/// K rows (n rows of d, row stride `stride`, f32 or bf16 bits) transposed into panels;
/// the columns of the last panel past n are zeroed.
void pack_kt(const float *k, int64_t n, int64_t d, int64_t stride, float *kt);
void pack_kt_bf16(const uint16_t *k, int64_t n, int64_t d, int64_t stride, float *kt);

}  // namespace attngate::kernels
