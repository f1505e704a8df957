// The flash-decode kernel: FlashDecoding's split-KV scheme, which ragged paged attention also
// uses. A task is one sequence's block of query tokens (every query head) over a range of its
// keys; when the batch has too few blocks to keep the threads busy, each block's keys are
// split into ranges that run as separate tasks, and a merge combines their partial softmax
// results (m, l, acc): out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s, M = max m_s.
//
// K and V rows are read where they lie (the pool's pages, or a dense tensor) through a
// pointer per key, and each row is loaded and widened once for all the query heads of its
// GQA group (decode_ops.hpp): a decode step reads every KV byte once. bf16 operands, f32
// accumulation and softmax statistics, probabilities rounded to bf16 before P V, as flash.
//
// The split count depends on the batch's shape, never on the thread count, so every thread
// count gives the same bits; the workspace depends on the thread count, heads and head dims,
// never on the lengths (the memory gate holds it to that).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "attention_tiles.hpp"
#include "decode_ops.hpp"
#include "paged.hpp"

namespace attngate::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kKeyBlock = 64;       // keys per softmax step
constexpr int64_t kMaxRows = 32;        // query rows (tokens x heads) of one block, when Hq allows
constexpr int64_t kTargetTasks = 32;    // the batch is split until it has this many tasks
constexpr int64_t kMinSplitKeys = 256;  // a split covers at least this many keys
constexpr int64_t kMaxSplitTasks = 2 * kTargetTasks;  // split tasks never exceed this (see Plan)

/// How the batch is cut into tasks: per sequence its blocks of query tokens and key splits.
class Plan {
public:
    Plan(const attngate_problem &p, int64_t *first_task)
        : p_(p), tokens_(std::max<int64_t>(1, kMaxRows / p.heads_q)), first_task_(first_task) {
        int64_t blocks = 0;
        for (int64_t b = 0; b < p.batch; ++b) blocks += blocks_of(b);
        // Only a batch of fewer than kTargetTasks blocks splits, into fewer than
        // kTargetTasks + blocks < kMaxSplitTasks tasks: the partials fit a fixed buffer.
        splits_per_block_ = blocks >= kTargetTasks ? 1 : (kTargetTasks + blocks - 1) / blocks;
        first_task_[0] = 0;
        for (int64_t b = 0; b < p.batch; ++b) first_task_[b + 1] = first_task_[b] + blocks_of(b) * splits(b);
    }

    int64_t q_len(int64_t b) const { return p_.paged ? p_.paged->cu_q_lens[b + 1] - p_.paged->cu_q_lens[b] : p_.seq_q; }
    int64_t kv_len(int64_t b) const { return p_.paged ? p_.paged->kv_lens[b] : p_.seq_k; }
    int64_t first_token(int64_t b) const { return p_.paged ? p_.paged->cu_q_lens[b] : b * p_.seq_q; }
    int64_t tokens() const { return tokens_; }
    int64_t rows() const { return tokens_ * p_.heads_q; }
    int64_t blocks_of(int64_t b) const { return (q_len(b) + tokens_ - 1) / tokens_; }
    /// Keys per split of sequence b: whole key blocks.
    int64_t split_size(int64_t b) const {
        const int64_t want = std::clamp<int64_t>(splits_per_block_, 1, std::max<int64_t>(1, kv_len(b) / kMinSplitKeys));
        return ((kv_len(b) + want - 1) / want + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
    }
    int64_t splits(int64_t b) const { return (kv_len(b) + split_size(b) - 1) / split_size(b); }
    int64_t tasks() const { return first_task_[p_.batch]; }
    int64_t first_task(int64_t b) const { return first_task_[b]; }
    bool splits_any() const { return splits_per_block_ > 1; }
    /// The sequence of a task (a search over the batch's first tasks).
    int64_t sequence_of(int64_t task) const {
        return std::upper_bound(first_task_, first_task_ + p_.batch + 1, task) - first_task_ - 1;
    }
    /// Keys [lo, hi) of split s of sequence b.
    void split_keys(int64_t b, int64_t s, int64_t &lo, int64_t &hi) const {
        lo = s * split_size(b);
        hi = std::min(kv_len(b), lo + split_size(b));
    }

private:
    const attngate_problem &p_;
    int64_t tokens_, splits_per_block_ = 1;
    int64_t *first_task_;  // [batch + 1]
};

/// Where one sequence's K and V rows lie: pages of the pools, or its slice of dense tensors.
class KvRows {
public:
    KvRows(const attngate_problem &p, int64_t b) : p_(p), b_(b) {
        if (p.paged) paged_.emplace(p, b);
    }
    /// Pointers to rows [j0, j1) of kv head 0 of K and V.
    void fill(int64_t j0, int64_t j1, const unsigned char **k, const unsigned char **v) const {
        const size_t e = operand_bytes(p_.dtype);
        const size_t ks = static_cast<size_t>(p_.heads_kv * p_.head_dim) * e, vs = static_cast<size_t>(p_.heads_kv * p_.head_dim_v) * e;
        for (int64_t j = j0; j < j1;) {
            int64_t run = p_.seq_k - j;
            const unsigned char *kr, *vr;
            if (paged_) {
                kr = paged_->row(false, j, 0, &run);
                vr = paged_->row(true, j, 0, nullptr);
            } else {
                kr = static_cast<const unsigned char *>(p_.k) + static_cast<size_t>(b_ * p_.seq_k + j) * ks;
                vr = static_cast<const unsigned char *>(p_.v) + static_cast<size_t>(b_ * p_.seq_k + j) * vs;
            }
            for (int64_t r = 0; r < std::min(run, j1 - j); ++r) {
                k[j - j0 + r] = kr + static_cast<size_t>(r) * ks;
                v[j - j0 + r] = vr + static_cast<size_t>(r) * vs;
            }
            j += std::min(run, j1 - j);
        }
    }

private:
    const attngate_problem &p_;
    int64_t b_;
    std::optional<PagedRows> paged_;
};

/// The running softmax state of a block's rows: max, sum, NaN seen, accumulator (prepared).
struct RowState {
    float *m, *l, *nan, *acc;
};

/// One worker's tiles, and the partials buffer's layout (one RowState per split task).
class DecodeLayout {
public:
    DecodeLayout(const attngate_problem &p, int64_t rows) : rows_(rows) {
        // Row strides padded for the widest path, not this one's (ops.padded(d): what the path
        // reads and writes), so that the workspace is the same bytes on every CPU.
        dpad_ = padded_for_every_path(p.head_dim), dvpad_ = padded_for_every_path(p.head_dim_v);
        q_ = layout_.add(rows * dpad_, sizeof(float));
        state_ = layout_.add(rows * state_floats(), sizeof(float));
        s_ = layout_.add((p.heads_q / p.heads_kv) * kKeyBlock, sizeof(float));
        k_ = layout_.add(2 * kKeyBlock, sizeof(void *));  // this key block's rows and the next one's
        v_ = layout_.add(2 * kKeyBlock, sizeof(void *));
    }
    size_t bytes() const { return layout_.size(); }
    int64_t dpad() const { return dpad_; }
    int64_t dvpad() const { return dvpad_; }
    int64_t state_floats() const { return dvpad_ + 3; }
    /// The state of `rows` rows laid out in floats at base: m, l, nan, then acc.
    RowState state_at(float *base) const {
        return {base, base + rows_, base + 2 * rows_, base + 3 * rows_};
    }
    float *q(const WorkerScratch &w, int worker) const { return w.at<float>(worker, q_); }
    RowState state(const WorkerScratch &w, int worker) const { return state_at(w.at<float>(worker, state_)); }
    float *scores(const WorkerScratch &w, int worker) const { return w.at<float>(worker, s_); }
    const unsigned char **k(const WorkerScratch &w, int worker) const { return w.at<const unsigned char *>(worker, k_); }
    const unsigned char **v(const WorkerScratch &w, int worker) const { return w.at<const unsigned char *>(worker, v_); }

private:
    ScratchLayout layout_;
    int64_t rows_, dpad_ = 0, dvpad_ = 0;
    size_t q_ = 0, state_ = 0, s_ = 0, k_ = 0, v_ = 0;
};

/// What every task of a call shares.
struct Decode {
    const attngate_problem &p;
    const Plan &plan;
    const DecodeLayout &layout;
    const DecodeOps &ops;
    const RowOps &rows;
    const WorkerScratch &scratch;
    float *partials;  // kMaxSplitTasks states of plan.rows() rows, or null when nothing splits
    int64_t *first_partial;  // [batch]: the partial of sequence b's first task

    int64_t group() const { return p.heads_q / p.heads_kv; }
    size_t elem() const { return operand_bytes(p.dtype); }
};

/// Keys [lo, hi) that token t of a sequence of q_len queries and kv_len keys may read.
void token_keys(const attngate_problem &p, int64_t q_len, int64_t kv_len, int64_t t, int64_t &lo, int64_t &hi) {
    attngate_problem s = p;
    s.seq_q = q_len;
    s.seq_k = kv_len;
    if (p.paged) s.causal_alignment = ATTNGATE_ALIGN_BOTTOM_RIGHT;
    ProblemView(s).key_range(t, lo, hi);
}

/// Folds scores s[0..n) of state row r into its running softmax; s becomes the probabilities.
void fold_row(const Decode &d, RowState st, int64_t r, float *s, int64_t n) {
    d.rows.finish(s, n, d.p.scale, d.p.softcap, nullptr, 0);
    bool nan = false;
    const float m_new = std::max(st.m[r], d.rows.max(s, n, &nan));
    if (nan) st.nan[r] = 1.0f;
    if (m_new == kNegInf) {  // every score -inf: the keys contribute nothing
        std::fill(s, s + n, 0.0f);
        return;
    }
    const float alpha = std::exp(st.m[r] - m_new);
    const float l_blk = d.rows.exp_sum(s, n, m_new, d.p.dtype == ATTNGATE_DTYPE_BF16);
    if (alpha != 1.0f) d.rows.scale(st.acc + r * d.layout.dvpad(), d.layout.dvpad(), alpha);
    st.l[r] = st.l[r] * alpha + l_blk;
    st.m[r] = m_new;
}

/// Writes one row's result: NaN when it saw one, zeros without keys, else acc / l.
void emit_row(const Decode &d, const float *acc, float m, float l, bool nan, float *out) {
    const int64_t dv = d.p.head_dim_v;
    if (nan) std::fill(out, out + dv, std::numeric_limits<float>::quiet_NaN());
    else if (m == kNegInf) std::fill(out, out + dv, 0.0f);
    else d.ops.emit(acc, d.p.dtype, dv, l, out);
}

/// A task's query rows: tokens [t0, t1) with their key ranges, prepared queries, scores, state.
struct BlockRows {
    int64_t t0, t1;
    const int64_t *lo, *hi;  // per token, within the task's split
    const float *q;
    float *s;
    RowState st;
};

/// Folds keys [first, last) of sequence b into the rows' state, a key block at a time; the
/// products ask for the next block's K and V rows as they go (every head of a key is one
/// contiguous run), so the memory fetch overlaps the arithmetic.
void attend_blocks(const Decode &d, int64_t b, int64_t first, int64_t last, const BlockRows &br, int worker) {
    const attngate_problem &p = d.p;
    const int64_t hq = p.heads_q, g = d.group(), dpad = d.layout.dpad(), dvpad = d.layout.dvpad();
    const KvRows kv(p, b);
    const unsigned char **kp = d.layout.k(d.scratch, worker), **vp = d.layout.v(d.scratch, worker);
    PrefetchQueue pf;
    pf.k_bytes = static_cast<size_t>(p.heads_kv * p.head_dim) * d.elem(), pf.v_bytes = static_cast<size_t>(p.heads_kv * p.head_dim_v) * d.elem();
    for (int64_t k0 = first, turn = 0; k0 < last; k0 += kKeyBlock, turn ^= 1) {
        const int64_t k1 = std::min(k0 + kKeyBlock, last), n1 = std::max<int64_t>(0, std::min(k1 + kKeyBlock, last) - k1);
        const unsigned char **ck = kp + turn * kKeyBlock, **cv = vp + turn * kKeyBlock;
        if (k0 == first) kv.fill(k0, k1, ck, cv);
        pf.drain();  // whatever of this block the products did not ask for yet
        pf.next_block(kp + (turn ^ 1) * kKeyBlock, vp + (turn ^ 1) * kKeyBlock, n1);
        kv.fill(k1, k1 + n1, kp + (turn ^ 1) * kKeyBlock, vp + (turn ^ 1) * kKeyBlock);
        for (int64_t hk = 0; hk < p.heads_kv; ++hk)
            for (int64_t t = br.t0; t < br.t1; ++t) {
                const int64_t a = std::max(br.lo[t - br.t0], k0), e = std::min(br.hi[t - br.t0], k1), r = (t - br.t0) * hq + hk * g;
                if (a >= e) continue;
                const size_t koff = static_cast<size_t>(hk * p.head_dim) * d.elem(), voff = static_cast<size_t>(hk * p.head_dim_v) * d.elem();
                d.ops.qk(g, e - a, p.head_dim, br.q + r * dpad, dpad, ck + (a - k0), koff, p.dtype, br.s, kKeyBlock, &pf);
                for (int64_t i = 0; i < g; ++i) fold_row(d, br.st, r + i, br.s + i * kKeyBlock, e - a);
                d.ops.pv(g, e - a, p.head_dim_v, br.s, kKeyBlock, cv + (a - k0), voff, p.dtype, br.st.acc + r * dvpad, dvpad, &pf);
            }
    }
}

/// Task `task`: one block of query tokens of one sequence over one key split.
void run_task(const Decode &d, int64_t task, int worker) {
    const attngate_problem &p = d.p;
    const int64_t b = d.plan.sequence_of(task), index = task - d.plan.first_task(b), splits = d.plan.splits(b);
    const int64_t block = index / splits, split = index % splits;
    const int64_t q_len = d.plan.q_len(b), kv_len = d.plan.kv_len(b), hq = p.heads_q;
    const int64_t t0 = block * d.plan.tokens(), t1 = std::min(q_len, t0 + d.plan.tokens()), tok0 = d.plan.first_token(b);
    int64_t s0, s1;
    d.plan.split_keys(b, split, s0, s1);
    const int64_t dpad = d.layout.dpad(), dvpad = d.layout.dvpad(), rows = (t1 - t0) * hq;
    float *q = d.layout.q(d.scratch, worker), *s = d.layout.scores(d.scratch, worker);
    RowState st = d.layout.state(d.scratch, worker);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r / hq, h = r % hq;
        d.ops.prepare(static_cast<const unsigned char *>(p.q) + static_cast<size_t>(((tok0 + t) * hq + h) * p.head_dim) * d.elem(),
                      p.dtype, p.head_dim, q + r * dpad);
        st.m[r] = kNegInf, st.l[r] = 0.0f, st.nan[r] = 0.0f;
        std::fill(st.acc + r * dvpad, st.acc + (r + 1) * dvpad, 0.0f);
    }
    int64_t lo[kMaxRows], hi[kMaxRows], first = s1, last = s0;  // tokens' key ranges within the split
    for (int64_t t = t0; t < t1; ++t) {
        token_keys(p, q_len, kv_len, t, lo[t - t0], hi[t - t0]);
        lo[t - t0] = std::max(lo[t - t0], s0), hi[t - t0] = std::min(hi[t - t0], s1);
        if (lo[t - t0] < hi[t - t0]) first = std::min(first, lo[t - t0]), last = std::max(last, hi[t - t0]);
    }
    attend_blocks(d, b, first, last, BlockRows{t0, t1, lo, hi, q, s, st}, worker);
    if (splits == 1) {
        for (int64_t r = 0; r < rows; ++r)
            emit_row(d, st.acc + r * dvpad, st.m[r], st.l[r], st.nan[r] != 0.0f,
                     p.out + ((tok0 + t0 + r / hq) * hq + r % hq) * p.head_dim_v);
        return;
    }
    const int64_t n = d.plan.rows() * d.layout.state_floats();
    std::copy(st.m, st.m + n, d.partials + (d.first_partial[b] + index) * n);
}

/// Combines the split partials of task `task`'s block when it is the block's first split.
void merge_block(const Decode &d, int64_t task, int worker) {
    const int64_t b = d.plan.sequence_of(task), index = task - d.plan.first_task(b), splits = d.plan.splits(b);
    if (splits == 1 || index % splits != 0) return;
    const attngate_problem &p = d.p;
    const int64_t hq = p.heads_q, dvpad = d.layout.dvpad(), n = d.plan.rows() * d.layout.state_floats();
    const int64_t t0 = index / splits * d.plan.tokens(), t1 = std::min(d.plan.q_len(b), t0 + d.plan.tokens());
    float *const first = d.partials + (d.first_partial[b] + index) * n;
    float *acc = d.layout.state(d.scratch, worker).acc;
    for (int64_t r = 0; r < (t1 - t0) * hq; ++r) {
        float m = kNegInf, l = 0.0f;
        bool nan = false;
        for (int64_t sp = 0; sp < splits; ++sp) {
            const RowState st = d.layout.state_at(first + sp * n);
            m = std::max(m, st.m[r]);
            nan = nan || st.nan[r] != 0.0f;
        }
        std::fill(acc, acc + dvpad, 0.0f);
        for (int64_t sp = 0; sp < splits && m != kNegInf; ++sp) {
            const RowState st = d.layout.state_at(first + sp * n);
            if (st.m[r] == kNegInf) continue;  // the split saw no key of this row
            const float w = std::exp(st.m[r] - m);
            l += w * st.l[r];
            for (int64_t e = 0; e < dvpad; ++e) acc[e] += w * st.acc[r * dvpad + e];
        }
        emit_row(d, acc, m, l, nan, p.out + ((d.plan.first_token(b) + t0 + r / hq) * hq + r % hq) * p.head_dim_v);
    }
}

int flash_decode_run(const attngate_kernel *, const attngate_problem *pp, char *err, size_t err_len) {
    const attngate_problem &p = *pp;
    if (p.bias || p.segment_ids_q) return fail(err, err_len, "flash-decode takes neither a bias nor segment ids");
    Workspace<int64_t> starts(p.allocator, 2 * (p.batch + 1));
    if (!starts.ok()) return fail(err, err_len, "workspace allocation failed");
    const Plan plan(p, starts.data());
    int64_t *first_partial = starts.data() + p.batch + 1;
    first_partial[0] = 0;
    for (int64_t b = 0; b < p.batch; ++b)
        first_partial[b + 1] = first_partial[b] + (plan.splits(b) > 1 ? plan.first_task(b + 1) - plan.first_task(b) : 0);
    const DecodeOps &ops = decode_ops(active_isa());
    const DecodeLayout layout(p, plan.rows());
    ThreadPool *pool = pool_of(p);
    // Every worker and the whole partials buffer, whatever this call needs: the workspace
    // must not follow the lengths (a longer batch may split where this one did not).
    WorkerScratch scratch(p.allocator, pool ? pool->size() : 1, layout.bytes());
    Workspace<float> partials(p.allocator, kMaxSplitTasks * plan.rows() * layout.state_floats());
    if (!scratch.ok() || !partials.ok()) return fail(err, err_len, "workspace allocation failed");
    const Decode d{p, plan, layout, ops, active_row_ops(), scratch, partials.data(), first_partial};
    for_each_task(pool, plan.tasks(), [&](int64_t task, int worker) { run_task(d, task, worker); });
    if (plan.splits_any()) for_each_task(pool, plan.tasks(), [&](int64_t task, int worker) { merge_block(d, task, worker); });
    return 0;
}

}  // namespace

extern const attngate_kernel flash_decode_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "flash-decode",
    /* .version     = */ "1.0.0",
    /* .description = */ "FlashDecoding: each sequence's keys split across threads, partial softmax results merged; "
                          "KV rows read once per GQA group, from pages or dense",
    /* .features    = */ ATTNGATE_FEATURE_ALL_PAGED & ~(ATTNGATE_FEATURE_BIAS | ATTNGATE_FEATURE_SEGMENT_IDS),
    /* .workspace   = */ ATTNGATE_WORKSPACE_CONSTANT,
    /* .supports    = */ nullptr,
    /* .run         = */ flash_decode_run,
    /* .user        = */ nullptr,
    /* .init        = */ instance_init,
    /* .free        = */ instance_free,
};

}  // namespace attngate::kernels
