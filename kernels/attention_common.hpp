// Indexing, masking and score helpers shared by the built-in kernels, so that all three
// implement one definition of the semantics documented in kernel_abi.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdarg>
#include <new>
#include <vector>

#include "attngate/bf16.hpp"
#include "attngate/kernel_abi.h"

namespace attngate::kernels {

/// Read-only view of a problem with the index arithmetic of the [B, S, H, D] layout.
class ProblemView {
public:
    explicit ProblemView(const attngate_problem &p) : p_(p), group_(p.heads_q / p.heads_kv) {
        for (int d = 0; d < 4; ++d) bias_extent_[d] = p.bias_shape[d];
        const int64_t full[4] = {p.batch, p.heads_q, p.seq_q, p.seq_k};
        int64_t stride = 1;
        for (int d = 3; d >= 0; --d) {
            bias_stride_[d] = (bias_extent_[d] == full[d] && full[d] != 1) ? stride : 0;
            stride *= bias_extent_[d];
        }
    }

    const attngate_problem &problem() const { return p_; }
    int64_t kv_head(int64_t h) const { return h / group_; }

    int64_t q_index(int64_t b, int64_t i, int64_t h) const {
        return ((b * p_.seq_q + i) * p_.heads_q + h) * p_.head_dim;
    }
    int64_t k_index(int64_t b, int64_t j, int64_t hk) const {
        return ((b * p_.seq_k + j) * p_.heads_kv + hk) * p_.head_dim;
    }
    int64_t v_index(int64_t b, int64_t j, int64_t hk) const {
        return ((b * p_.seq_k + j) * p_.heads_kv + hk) * p_.head_dim_v;
    }
    int64_t out_index(int64_t b, int64_t i, int64_t h) const {
        return ((b * p_.seq_q + i) * p_.heads_q + h) * p_.head_dim_v;
    }

    /// Key position that query row i is aligned to (bottom-right unless told top-left).
    int64_t aligned_position(int64_t i) const {
        return p_.causal_alignment == ATTNGATE_ALIGN_TOP_LEFT ? i : i + p_.seq_k - p_.seq_q;
    }

    /// Half-open range of keys that causal masking and the window leave for row i.
    void key_range(int64_t i, int64_t &lo, int64_t &hi) const {
        const int64_t pos = aligned_position(i);
        lo = 0;
        hi = p_.seq_k;
        if (p_.causal) hi = std::min(hi, pos + 1);
        if (p_.window_right >= 0) hi = std::min(hi, pos + p_.window_right + 1);
        if (p_.window_left >= 0) lo = std::max(lo, pos - p_.window_left);
        lo = std::clamp<int64_t>(lo, 0, p_.seq_k);
        hi = std::clamp<int64_t>(hi, lo, p_.seq_k);
    }

    bool segment_allowed(int64_t b, int64_t i, int64_t j) const {
        if (!p_.segment_ids_q) return true;
        return p_.segment_ids_q[b * p_.seq_q + i] == p_.segment_ids_kv[b * p_.seq_k + j];
    }

    bool allowed(int64_t b, int64_t i, int64_t j) const {
        int64_t lo, hi;
        key_range(i, lo, hi);
        return j >= lo && j < hi && segment_allowed(b, i, j);
    }

    /// Pointer to bias[b, h, i, 0] after broadcasting, or null without a bias; step along
    /// keys by bias_key_stride() (0 when the bias broadcasts over keys, else 1).
    const float *bias_row(int64_t b, int64_t h, int64_t i) const {
        if (!p_.bias) return nullptr;
        return p_.bias + b * bias_stride_[0] + h * bias_stride_[1] + i * bias_stride_[2];
    }
    int64_t bias_key_stride() const { return bias_stride_[3]; }

    float bias(int64_t b, int64_t h, int64_t i, int64_t j) const {
        if (!p_.bias) return 0.0f;
        return p_.bias[b * bias_stride_[0] + h * bias_stride_[1] + i * bias_stride_[2] +
                       j * bias_stride_[3]];
    }

    /// The score transform after the dot product, at precision T.
    template <typename T>
    T finish_score(T dot, int64_t b, int64_t h, int64_t i, int64_t j) const {
        T s = dot * static_cast<T>(p_.scale);
        if (p_.softcap > 0.0f) {
            const T cap = static_cast<T>(p_.softcap);
            s = cap * std::tanh(s / cap);
        }
        return s + static_cast<T>(bias(b, h, i, j));
    }

private:
    const attngate_problem &p_;
    int64_t group_;
    int64_t bias_extent_[4];
    int64_t bias_stride_[4];
};

/// Widens an operand tensor (f32 or bf16 bits) to float, exactly.
inline void widen(const void *src, attngate_dtype dtype, int64_t n, float *dst) {
    if (dtype == ATTNGATE_DTYPE_BF16) {
        const auto *s = static_cast<const std::uint16_t *>(src);
        for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
    } else {
        const auto *s = static_cast<const float *>(src);
        std::copy(s, s + n, dst);
    }
}

/// Widens n elements of an operand tensor starting at element offset.
inline void widen_at(const void *src, attngate_dtype dtype, int64_t offset, int64_t n, float *dst) {
    const size_t elem = dtype == ATTNGATE_DTYPE_BF16 ? sizeof(std::uint16_t) : sizeof(float);
    widen(static_cast<const unsigned char *>(src) + static_cast<size_t>(offset) * elem, dtype, n, dst);
}

/// Rounds a probability to the operand precision before the P·V product.
inline float operand_round(float x, attngate_dtype dtype) {
    return dtype == ATTNGATE_DTYPE_BF16 ? round_to_bf16(x) : x;
}

/// Typed workspace from the harness allocator, freed on scope exit.
template <typename T>
class Workspace {
public:
    Workspace(const attngate_allocator *a, int64_t count) : a_(a), n_(count) {
        ptr_ = static_cast<T *>(a_->alloc(a_->ctx, sizeof(T) * static_cast<size_t>(count)));
    }
    ~Workspace() { a_->free(a_->ctx, ptr_); }
    Workspace(const Workspace &) = delete;
    Workspace &operator=(const Workspace &) = delete;
    bool ok() const { return ptr_ != nullptr || n_ == 0; }
    T *data() { return ptr_; }
    T &operator[](int64_t i) { return ptr_[i]; }

private:
    const attngate_allocator *a_;
    int64_t n_;
    T *ptr_;
};

/// Writes a printf-style message into a kernel's error buffer.
inline int fail(char *err, size_t err_len, const char *fmt, ...) {
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/// Operand tensors widened to float in harness-allocated workspace.
struct WidenedOperands {
    WidenedOperands(const attngate_problem &p)
        : q(p.allocator, p.batch * p.seq_q * p.heads_q * p.head_dim),
          k(p.allocator, p.batch * p.seq_k * p.heads_kv * p.head_dim),
          v(p.allocator, p.batch * p.seq_k * p.heads_kv * p.head_dim_v) {
        if (!ok()) return;
        widen(p.q, p.dtype, p.batch * p.seq_q * p.heads_q * p.head_dim, q.data());
        widen(p.k, p.dtype, p.batch * p.seq_k * p.heads_kv * p.head_dim, k.data());
        widen(p.v, p.dtype, p.batch * p.seq_k * p.heads_kv * p.head_dim_v, v.data());
    }
    bool ok() const { return q.ok() && k.ok() && v.ok(); }
    Workspace<float> q, k, v;
};

/// Dot product of two float rows with float accumulation in index order.
inline float dot_f32(const float *a, const float *b, int64_t n) {
    float acc = 0.0f;
    for (int64_t d = 0; d < n; ++d) acc += a[d] * b[d];
    return acc;
}

}  // namespace attngate::kernels
