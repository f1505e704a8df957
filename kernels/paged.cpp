// Sequences of paged problems as dense problems, and their rows gathered.
#include "paged.hpp"

#include <algorithm>

namespace attngate::kernels {

attngate_problem sequence_problem(const attngate_problem &p, int64_t b) {
    const attngate_paged_kv &kv = *p.paged;
    attngate_problem s = p;
    const int64_t q0 = kv.cu_q_lens[b];
    s.batch = 1;
    s.seq_q = kv.cu_q_lens[b + 1] - q0;
    s.seq_k = kv.kv_lens[b];
    s.q = static_cast<const unsigned char *>(p.q) + static_cast<size_t>(q0 * p.heads_q * p.head_dim) * operand_bytes(p.dtype);
    s.out = p.out + q0 * p.heads_q * p.head_dim_v;
    s.k = s.v = nullptr;
    s.causal_alignment = ATTNGATE_ALIGN_BOTTOM_RIGHT;
    s.paged = nullptr;
    return s;
}

void PagedRows::gather(bool value, int64_t j0, int64_t n, int64_t hk, void *dst) const {
    const int64_t dim = value ? dv_ : dk_;
    const size_t row_bytes = static_cast<size_t>(dim) * elem_, stride = row_bytes * static_cast<size_t>(heads_);
    auto *out = static_cast<unsigned char *>(dst);
    for (int64_t j = j0; j < j0 + n;) {
        int64_t run = 0;
        const unsigned char *src = row(value, j, hk < 0 ? 0 : hk, &run);
        run = std::min(run, j0 + n - j);
        if (hk < 0) {  // every head: the page's slots are contiguous
            std::memcpy(out, src, stride * static_cast<size_t>(run));
            out += stride * static_cast<size_t>(run);
        } else {
            for (int64_t r = 0; r < run; ++r, out += row_bytes) std::memcpy(out, src + static_cast<size_t>(r) * stride, row_bytes);
        }
        j += run;
    }
}

attngate_problem GatheredKv::sequence(const attngate_problem &p, int64_t b) {
    attngate_problem s = sequence_problem(p, b);
    const PagedRows rows(p, b);
    rows.gather(false, 0, s.seq_k, -1, k_.data());
    rows.gather(true, 0, s.seq_k, -1, v_.data());
    s.k = k_.data();
    s.v = v_.data();
    return s;
}

}  // namespace attngate::kernels
