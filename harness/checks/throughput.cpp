// Kept-score counting, the attention FLOP formula and throughput figures.
#include "checks/throughput.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "io/error.hpp"

namespace attngate {

namespace {

/// The interval [lo, hi] of keys row i may see (before segments); empty when lo > hi.
std::pair<int64_t, int64_t> key_interval(const AttentionShape &s, int64_t i) {
    const int64_t p = s.top_left ? i : i + s.seq_k - s.seq_q;
    int64_t lo = 0, hi = s.seq_k - 1;
    if (s.causal) hi = std::min(hi, p);
    if (s.window_left >= 0) lo = std::max(lo, p - s.window_left);
    if (s.window_right >= 0) hi = std::min(hi, p + s.window_right);
    return {lo, hi};
}

}  // namespace

AttentionShape attention_shape(const CaseSpec &c) {
    AttentionShape s{c.batch, c.seq_q, c.seq_k, c.heads_q, c.head_dim, c.head_dim_v, c.causal, c.window_left, c.window_right, c.top_left};
    if (c.paged)
        for (size_t b = 0; b < c.paged->kv_lens.size(); ++b) s.sequences.emplace_back(c.paged->q_lens[b], c.paged->kv_lens[b]);
    return s;
}

int64_t kept_scores(const AttentionShape &s) {
    if (!s.sequences.empty()) {  // each sequence a dense problem of batch 1, bottom-right
        int64_t kept = 0;
        for (const auto &[q_len, kv_len] : s.sequences) {
            AttentionShape one = s;
            one.sequences.clear();
            one.batch = 1, one.seq_q = q_len, one.seq_k = kv_len, one.top_left = false;
            kept += kept_scores(one);
        }
        return kept;
    }
    int64_t per_problem = 0;
    for (int64_t i = 0; i < s.seq_q; ++i) {
        const auto [lo, hi] = key_interval(s, i);
        per_problem += std::max<int64_t>(0, hi - lo + 1);
    }
    return per_problem * s.batch * s.heads_q;
}

int64_t kept_scores(const AttentionShape &s, std::span<const int32_t> segment_ids_q,
                    std::span<const int32_t> segment_ids_kv) {
    ATTNGATE_CHECK(static_cast<int64_t>(segment_ids_q.size()) == s.batch * s.seq_q);
    ATTNGATE_CHECK(static_cast<int64_t>(segment_ids_kv.size()) == s.batch * s.seq_k);
    int64_t kept = 0;
    std::vector<std::pair<int32_t, int64_t>> keys(static_cast<size_t>(s.seq_k));  // (segment, position), sorted
    for (int64_t b = 0; b < s.batch; ++b) {
        for (int64_t j = 0; j < s.seq_k; ++j) keys[static_cast<size_t>(j)] = {segment_ids_kv[static_cast<size_t>(b * s.seq_k + j)], j};
        std::sort(keys.begin(), keys.end());
        for (int64_t i = 0; i < s.seq_q; ++i) {
            const auto [lo, hi] = key_interval(s, i);
            if (lo > hi) continue;
            const int32_t seg = segment_ids_q[static_cast<size_t>(b * s.seq_q + i)];
            const auto first = std::lower_bound(keys.begin(), keys.end(), std::pair{seg, lo});
            const auto last = std::upper_bound(keys.begin(), keys.end(), std::pair{seg, hi});
            kept += last - first;
        }
    }
    return kept * s.heads_q;
}

double attention_flops(const AttentionShape &s, int64_t kept) {
    return 2.0 * static_cast<double>(s.head_dim + s.head_dim_v) * static_cast<double>(kept);
}

double attention_flops(const AttentionShape &s) { return attention_flops(s, kept_scores(s)); }

double case_flops(const CaseSpec &c, std::span<const int32_t> segment_ids_q, std::span<const int32_t> segment_ids_kv) {
    const AttentionShape s = attention_shape(c);
    return attention_flops(s, segment_ids_q.empty() ? kept_scores(s) : kept_scores(s, segment_ids_q, segment_ids_kv));
}

double tokens_per_second(const AttentionShape &s, double median_seconds) {
    if (!(median_seconds > 0.0)) return std::numeric_limits<double>::quiet_NaN();
    return static_cast<double>(s.sequences.empty() ? s.batch * s.seq_q : s.seq_q) / median_seconds;
}

double gflops_per_second(double flops, double seconds) {
    if (!(seconds > 0.0)) return std::numeric_limits<double>::quiet_NaN();
    return flops / seconds / 1e9;
}

}  // namespace attngate
