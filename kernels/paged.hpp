// Paged problems in the built-in kernels: each sequence of the batch is a dense problem of
// batch 1 (the ABI's per-sequence semantics), whose K and V rows are found through its page
// table. reference and native gather them into a dense copy; flash reads them where they lie.
#pragma once

#include <cstdint>
#include <cstring>

#include "attention_common.hpp"

namespace attngate::kernels {

/// Sequence b of a paged problem as a dense one: batch 1, its q_len and kv_len, its queries
/// and outputs; k and v are NULL (a kernel gathers them or reads them through PagedRows).
attngate_problem sequence_problem(const attngate_problem &p, int64_t b);

/// Bytes of one operand element.
inline size_t operand_bytes(attngate_dtype dtype) { return dtype == ATTNGATE_DTYPE_BF16 ? 2 : 4; }

/// Where sequence b's K and V rows lie in the pools.
class PagedRows {
public:
    PagedRows(const attngate_problem &p, int64_t b)
        : kv_(*p.paged), table_(p.paged->page_table + b * p.paged->pages_per_seq), heads_(p.heads_kv),
          dk_(p.head_dim), dv_(p.head_dim_v), elem_(operand_bytes(p.dtype)) {}

    /// Key j of kv head hk in K (or V when `value`), and how many rows from j on follow it at
    /// the row stride heads_kv x dim (the rest of its page).
    const unsigned char *row(bool value, int64_t j, int64_t hk, int64_t *run) const {
        const int64_t page = table_[j / kv_.page_size], slot = j % kv_.page_size, dim = value ? dv_ : dk_;
        if (run) *run = kv_.page_size - slot;
        const auto *pool = static_cast<const unsigned char *>(value ? kv_.v_pages : kv_.k_pages);
        return pool + static_cast<size_t>(((page * kv_.page_size + slot) * heads_ + hk) * dim) * elem_;
    }

    /// Copies keys [j0, j0 + n) of K (or V) into dst: every kv head ([n, Hkv, dim]) when hk
    /// < 0, else head hk's rows alone ([n, dim]).
    void gather(bool value, int64_t j0, int64_t n, int64_t hk, void *dst) const;

private:
    const attngate_paged_kv &kv_;
    const int32_t *table_;
    int64_t heads_, dk_, dv_;
    size_t elem_;
};

/// One sequence's K and V gathered dense ([kv_len, Hkv, D] and [kv_len, Hkv, Dv]) in
/// harness-allocated workspace sized for the problem's longest sequence.
class GatheredKv {
public:
    explicit GatheredKv(const attngate_problem &p)
        : k_(p.allocator, static_cast<int64_t>(operand_bytes(p.dtype)) * p.seq_k * p.heads_kv * p.head_dim),
          v_(p.allocator, static_cast<int64_t>(operand_bytes(p.dtype)) * p.seq_k * p.heads_kv * p.head_dim_v) {}
    bool ok() const { return k_.ok() && v_.ok(); }
    /// Sequence b's dense problem with k and v pointing at its gathered copy.
    attngate_problem sequence(const attngate_problem &p, int64_t b);

private:
    Workspace<unsigned char> k_, v_;
};

/// Runs dense(sub, b) on every sequence of a paged problem, its K and V gathered dense; the
/// first non-zero status stops it.
template <typename Dense>
int for_each_gathered_sequence(const attngate_problem &p, char *err, size_t err_len, Dense &&dense) {
    GatheredKv kv(p);
    if (!kv.ok()) return fail(err, err_len, "workspace allocation failed");
    for (int64_t b = 0; b < p.batch; ++b) {
        const attngate_problem sub = kv.sequence(p, b);
        if (const int rc = dense(sub, b); rc != 0) return rc;
    }
    return 0;
}

}  // namespace attngate::kernels
