// bf16 tile products as the MXU does them: bf16 operands, f32 accumulation, through
// vdpbf16ps (AVX-512 BF16). Operands are packed as pairs of bf16 along the contracted
// dimension, one 32-bit word per pair (even index in the low half), the layout the
// instruction reads.
#pragma once

#include <cstdint>

namespace attngate::kernels {

/// Tile products over pair-packed operands (see the pack_* functions).
struct PairGemm {
    /// s[m x n] (row stride lds) = Q . K^T over d2 pairs: qp [m][d2], kp [d2][ldk].
    void (*qk)(int64_t m, int64_t n, int64_t d2, const uint32_t *qp, const uint32_t *kp, int64_t ldk, float *s,
               int64_t lds);
    /// acc[m x dv] (row stride ldc) += P . V over n2 pairs: pp [m][n2], vp [n2][ldv].
    void (*pv)(int64_t m, int64_t dv, int64_t n2, const uint32_t *pp, const uint32_t *vp, int64_t ldv, float *acc,
               int64_t ldc);
};

/// vdpbf16ps; only on CPUs with AVX-512 BF16.
const PairGemm &pair_gemm_avx512bf16();

/// FLOPs per second of vdpbf16ps over those of vfmadd231ps (both on 512-bit registers),
/// measured now on this CPU in about 1 ms; only on CPUs with AVX-512 BF16. The instruction
/// does twice the FLOPs of an FMA, but not every CPU retires it as fast: on the Xeon this
/// project was measured on it ran at half the FMA's instruction rate (ratio 0.48).
double vdpbf16ps_flop_ratio();

/// The same microkernels over plain C++ lanes that compute what vdpbf16ps computes, so
/// the tests run the AVX-512 BF16 code's packing and loops on any CPU.
const PairGemm &pair_gemm_emulated();

/// Rows of bf16 bits (row stride `stride`) as pairs: out [rows][(dim + 1) / 2].
void pack_row_pairs(const uint16_t *src, int64_t rows, int64_t dim, int64_t stride, uint32_t *out);

/// Rows of floats that are exactly bf16 (rounded probabilities) as pairs: out [rows][(n + 1) / 2].
void pack_float_row_pairs(const float *src, int64_t rows, int64_t n, int64_t stride, uint32_t *out);

/// K rows j (row stride `stride`, n rows of dim) transposed to pairs along dim:
/// out [(dim + 1) / 2][ld], ld >= n (columns past n are zero).
void pack_k_pairs(const uint16_t *src, int64_t n, int64_t dim, int64_t stride, int64_t ld, uint32_t *out);

/// V rows j as pairs of consecutive rows: out [(n + 1) / 2][ld], ld >= dim (zero past dim).
void pack_v_pairs(const uint16_t *src, int64_t n, int64_t dim, int64_t stride, int64_t ld, uint32_t *out);

/// True when no bf16 value is NaN or infinite.
bool bf16_rows_finite(const uint16_t *src, int64_t rows, int64_t dim, int64_t stride);

}  // namespace attngate::kernels
