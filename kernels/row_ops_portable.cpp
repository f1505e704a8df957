// The portable row operations: plain C++ that any x86-64 (or other) CPU runs, and the
// dispatch from an instruction-set path to its table.
#include <cmath>
#include <limits>

#include "attngate/bf16.hpp"
#include "row_ops.hpp"

namespace attngate::kernels {
namespace {

void finish(float *s, int64_t n, float scale, float cap, const float *bias, int64_t bias_stride) {
    for (int64_t j = 0; j < n; ++j) {
        float x = s[j] * scale;
        if (cap > 0.0f) x = cap * std::tanh(x / cap);
        if (bias) x = x + bias[j * bias_stride];
        s[j] = x;
    }
}

float max(const float *s, int64_t n, bool *has_nan) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n; ++j) {
        if (std::isnan(s[j])) *has_nan = true;
        else if (s[j] > m) m = s[j];
    }
    return m;
}

float exp_sum(float *s, int64_t n, float m, bool round_bf16) {
    float l = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - m);
        l += s[j];
    }
    if (round_bf16)
        for (int64_t j = 0; j < n; ++j) s[j] = round_to_bf16(s[j]);
    return l;
}

void normalize(float *s, int64_t n, float l, bool round_bf16) {
    for (int64_t j = 0; j < n; ++j) s[j] = round_bf16 ? round_to_bf16(s[j] / l) : s[j] / l;
}

void scale(float *a, int64_t n, float alpha) {
    for (int64_t j = 0; j < n; ++j) a[j] *= alpha;
}

void divide(const float *a, int64_t n, float l, float *out) {
    for (int64_t j = 0; j < n; ++j) out[j] = a[j] / l;
}

void widen_bf16(const uint16_t *src, int64_t n, float *dst) {
    for (int64_t j = 0; j < n; ++j) dst[j] = bf16_to_float(src[j]);
}

bool all_finite(const float *a, int64_t n) {
    for (int64_t j = 0; j < n; ++j)
        if (!std::isfinite(a[j])) return false;
    return true;
}

}  // namespace

const RowOps &row_ops_portable() {
    static const RowOps ops{finish, max, exp_sum, normalize, scale, divide, widen_bf16, all_finite};
    return ops;
}

const RowOps &row_ops(Isa isa) {
    switch (isa) {
    case Isa::Avx512Bf16:
    case Isa::Avx512: return row_ops_avx512();
    case Isa::Avx2: return row_ops_avx2();
    case Isa::Portable: break;
    }
    return row_ops_portable();
}

}  // namespace attngate::kernels
