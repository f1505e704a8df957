// The element-wise steps of attention between the two matrix products (score finishing,
// softmax, rescaling, bf16 conversions), one table per instruction-set path.
#pragma once

#include <cstdint>

#include "cpu_dispatch.hpp"

namespace attngate::kernels {

/// Row operations over n contiguous floats. Every path computes the same formulas in the
/// same order per element; they differ only in exp and tanh (std:: in the portable path,
/// SLEEF's 1-ulp vector versions otherwise) and in the order of the row sums.
struct RowOps {
    /// s = softcap(s * scale) + bias[j * bias_stride] (bias may be null; cap <= 0: no cap).
    void (*finish)(float *s, int64_t n, float scale, float cap, const float *bias, int64_t bias_stride);
    /// Largest non-NaN entry (-inf when none); sets *has_nan when any entry is NaN.
    float (*max)(const float *s, int64_t n, bool *has_nan);
    /// s = exp(s - m) in place (-inf -> 0); returns the sum of the unrounded values, then
    /// rounds s to bf16 (nearest even) when round_bf16.
    float (*exp_sum)(float *s, int64_t n, float m, bool round_bf16);
    /// s = s / l, rounded to bf16 when round_bf16.
    void (*normalize)(float *s, int64_t n, float l, bool round_bf16);
    /// a *= alpha.
    void (*scale)(float *a, int64_t n, float alpha);
    /// out = a / l.
    void (*divide)(const float *a, int64_t n, float l, float *out);
    /// dst = bf16 bits of src widened to float (exact).
    void (*widen_bf16)(const uint16_t *src, int64_t n, float *dst);
    /// True when no entry is NaN or infinite.
    bool (*all_finite)(const float *a, int64_t n);
};

/// The table for a path; a path the build lacks falls back to the next lower one.
const RowOps &row_ops(Isa isa);

/// Per-path tables, each defined in its own file (only those files carry wide code).
const RowOps &row_ops_portable();
const RowOps &row_ops_avx2();
const RowOps &row_ops_avx512();

}  // namespace attngate::kernels
