// Deliberately wrong paged kernels, joined to the faulty-kernel plugin: plain f32 paged
// attention with one defect each, of the kinds a paged KV cache invites. The gate must catch
// each with the right reason while the built-in kernels pass the same cases.
#include <cmath>
#include <limits>
#include <vector>

#include "attention_common.hpp"
#include "paged_faults.hpp"

namespace {

using attngate::kernels::fail;

enum PagedFault : int {
    kPastKvLen = 1,    // a row that reaches the last key also reads the slot after it
    kPageOffByOne = 2, // follows the page table one page off: the pool page after the right one
    kPagesInOrder = 3, // ignores the table: sequence b's pages as if laid out one after another
    kGqaModulo = 4,    // query head h reads kv head h % Hkv instead of h / (Hq / Hkv)
};

float operand(const void *base, attngate_dtype dtype, int64_t index) {
    return dtype == ATTNGATE_DTYPE_BF16 ? attngate::bf16_to_float(static_cast<const uint16_t *>(base)[index])
                                        : static_cast<const float *>(base)[index];
}

/// The pool page the faulty kernel reads for key j of sequence b.
int64_t page_of(const attngate_problem &p, PagedFault fault, int64_t b, int64_t j) {
    const attngate_paged_kv &kv = *p.paged;
    const int64_t logical = j / kv.page_size;
    if (fault == kPagesInOrder) {
        int64_t first = 0;
        for (int64_t s = 0; s < b; ++s) first += (kv.kv_lens[s] + kv.page_size - 1) / kv.page_size;
        return (first + logical) % kv.num_pages;
    }
    // Past kv_len on a sequence of whole pages: the next entry of the table, kept in the array.
    const int64_t entry = std::min(b * kv.pages_per_seq + logical, p.batch * kv.pages_per_seq - 1);
    const int64_t page = kv.page_table[entry];
    return fault == kPageOffByOne ? (page + 1) % kv.num_pages : page;
}

/// One query row of sequence b: keys [lo, hi), its output row.
void attend_row(const attngate_problem &p, PagedFault fault, int64_t b, int64_t token, int64_t h, int64_t lo, int64_t hi) {
    const attngate_paged_kv &kv = *p.paged;
    const int64_t hk = fault == kGqaModulo ? h % p.heads_kv : h / (p.heads_q / p.heads_kv);
    std::vector<float> s(static_cast<size_t>(std::max<int64_t>(hi - lo, 0)));
    std::vector<int64_t> slot(s.size());
    float m = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t j = lo; j < hi; ++j) {
        const int64_t at = page_of(p, fault, b, j) * kv.page_size + j % kv.page_size;
        slot[static_cast<size_t>(j - lo)] = at;
        float dot = 0.0f;
        for (int64_t d = 0; d < p.head_dim; ++d)
            dot += operand(p.q, p.dtype, (token * p.heads_q + h) * p.head_dim + d) *
                   operand(kv.k_pages, p.dtype, (at * p.heads_kv + hk) * p.head_dim + d);
        float x = dot * p.scale;
        if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
        s[static_cast<size_t>(j - lo)] = x;
        if (std::isnan(x)) nan = true;
        else m = std::max(m, x);
    }
    float l = 0.0f;
    for (float &x : s) l += (x = std::exp(x - m));
    float *out = p.out + (token * p.heads_q + h) * p.head_dim_v;
    for (int64_t e = 0; e < p.head_dim_v; ++e) {
        float acc = 0.0f;
        for (size_t n = 0; n < s.size(); ++n) acc += s[n] * operand(kv.v_pages, p.dtype, (slot[n] * p.heads_kv + hk) * p.head_dim_v + e);
        out[e] = nan ? std::numeric_limits<float>::quiet_NaN() : s.empty() ? 0.0f : acc / l;
    }
}

int paged_fault_run(const attngate_kernel *self, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    if (!p.paged) return fail(err, n, "paged cases only");
    const auto fault = static_cast<PagedFault>(reinterpret_cast<intptr_t>(self->user));
    const attngate_paged_kv &kv = *p.paged;
    for (int64_t b = 0; b < p.batch; ++b) {
        const int64_t q0 = kv.cu_q_lens[b], ql = kv.cu_q_lens[b + 1] - q0, kl = kv.kv_lens[b];
        attngate_problem seq = p;
        seq.seq_q = ql, seq.seq_k = kl, seq.paged = nullptr;
        const attngate::kernels::ProblemView view(seq);
        for (int64_t i = 0; i < ql; ++i) {
            int64_t lo, hi;
            view.key_range(i, lo, hi);
            if (fault == kPastKvLen && hi == kl) ++hi;
            for (int64_t h = 0; h < p.heads_q; ++h) attend_row(p, fault, b, q0 + i, h, lo, hi);
        }
    }
    return 0;
}

int paged_only(const attngate_kernel *, const attngate_problem *p, char *why, size_t n) {
    if (p->paged) return 1;
    fail(why, n, "paged cases only");
    return 0;
}

constexpr uint32_t kPagedFeatures = ATTNGATE_FEATURE_PAGED_KV | ATTNGATE_FEATURE_RAGGED | ATTNGATE_FEATURE_CAUSAL |
                                    ATTNGATE_FEATURE_WINDOW | ATTNGATE_FEATURE_SOFTCAP | ATTNGATE_FEATURE_GQA |
                                    ATTNGATE_FEATURE_HEAD_DIM_V | ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_BF16;

#define PAGED_FAULT(name, what, fault)                                                                    \
    {ATTNGATE_API_VERSION, name, "0.0.1", what, kPagedFeatures, ATTNGATE_WORKSPACE_UNSPECIFIED, paged_only, \
     paged_fault_run, reinterpret_cast<void *>(fault), nullptr, nullptr}

const attngate_kernel kPagedFaults[] = {
    PAGED_FAULT("paged_past_kv_len", "reads one slot past kv_len: a row that sees the last key also sees the next", kPastKvLen),
    PAGED_FAULT("paged_page_off_by_one", "follows the page table one page off: the pool page after the right one", kPageOffByOne),
    PAGED_FAULT("paged_pages_in_order", "ignores the page table: reads a sequence's pages as if they were contiguous", kPagesInOrder),
    PAGED_FAULT("paged_gqa_modulo", "maps query head h to kv head h % Hkv instead of h / (Hq / Hkv)", kGqaModulo),
};

}  // namespace

std::span<const attngate_kernel> paged_fault_kernels() { return kPagedFaults; }
