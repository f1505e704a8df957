// Throughput figures of an attention call: the scores its mask keeps, the FLOPs those
// cost, tokens per second and achieved GFLOP/s.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "plan/suite.hpp"

namespace attngate {

/// The dimensions and mask of one attention problem (segments are passed separately).
struct AttentionShape {
    int64_t batch = 1, seq_q = 0, seq_k = 0, heads_q = 0, head_dim = 0, head_dim_v = 0;
    bool causal = false;
    int64_t window_left = -1, window_right = -1;  ///< < 0: unbounded
    bool top_left = false;                        ///< causal/window alignment (default bottom-right)
    /// A paged case's sequences, (q_len, kv_len) each, bottom-right aligned: then batch is
    /// their count, seq_q their query tokens, seq_k the longest kv_len. Empty: dense.
    std::vector<std::pair<int64_t, int64_t>> sequences{};
};

/// The shape of a suite case.
AttentionShape attention_shape(const CaseSpec &c);

/// Scores (query row, key) the mask keeps, summed over batch (a paged batch: over its
/// sequences, each with its own lengths), query heads and rows.
/// Bottom-right alignment as the kernels use it: query row i sits at key position
/// p = i + Sk - Sq; causal keeps keys j <= p; a window [left, right] keeps
/// p - left <= j <= p + right. O(Sq): each row keeps one interval of keys.
int64_t kept_scores(const AttentionShape &s);

/// The same with segment ids ([B, Sq] and [B, Sk], row-major): a row also keeps only keys
/// of its own segment. O(B (Sk log Sk + Sq log Sk)). Sizes must match the shape (checked).
int64_t kept_scores(const AttentionShape &s, std::span<const int32_t> segment_ids_q,
                    std::span<const int32_t> segment_ids_kv);

/// FLOPs of the kept part only: each kept score costs 2 D for its row of Q K^T and
/// 2 Dv for its share of P V, so flops = 2 (D + Dv) kept_scores. Softmax, scaling, bias
/// and soft-capping are not counted (O(scores), not O(scores x D)), as in FlashAttention's
/// and llama.cpp's op_flops convention; masked scores count nothing even when a kernel
/// computes them, so a kernel that skips masked blocks is not penalised.
double attention_flops(const AttentionShape &s, int64_t kept);

/// attention_flops(s, kept_scores(s)): no segments.
double attention_flops(const AttentionShape &s);

/// The FLOPs of a suite case as every timing report counts them: its mask, and its segment
/// ids when it has them (empty spans: none). The perf phase and A/B both call this, so a
/// packed-sequence case reports the same GFLOP/s in either.
double case_flops(const CaseSpec &c, std::span<const int32_t> segment_ids_q, std::span<const int32_t> segment_ids_kv);

/// Query tokens per second: B * Sq (a paged batch: its query tokens, the sum of q_lens) /
/// median_seconds (per call). NaN unless seconds > 0.
double tokens_per_second(const AttentionShape &s, double median_seconds);

/// Achieved GFLOP/s: flops / seconds / 1e9. NaN unless seconds > 0.
double gflops_per_second(double flops, double seconds);

}  // namespace attngate
