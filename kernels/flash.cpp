// The flash kernel: tiled online softmax as in the Pallas TPU flash-attention kernel.
// Per query block it keeps a running max m, running sum l and a rescaled accumulator per
// row, visits key blocks in order and skips blocks the mask removes entirely. Its
// workspace depends on the block sizes (and the thread count), never on Sq or Sk.
//
// Speed: both products of a tile (S = Q K^T, acc += P V) go to the FMA microkernels of the
// CPU's path (tile_gemm.hpp) on f32 operands and on bf16 ones widened to f32 (exact), or,
// for bf16 on CPUs with AVX-512 BF16, to vdpbf16ps microkernels over pair-packed bf16
// (bf16_pairs.hpp); the softmax steps in between to the vector row operations of the
// CPU's path (row_ops.hpp); the (batch, head, 256 query rows) tasks to the instance's
// threads. A task's result does not depend on which thread runs it, so any thread count
// gives the same bits.
#include <cmath>
#include <limits>

#include "attention_tiles.hpp"
#include "bf16_pairs.hpp"
#include "paged.hpp"
#include "tile_gemm.hpp"

namespace attngate::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kDefaultBlock = 128;  // the TPU kernel's default block_q and block_k
constexpr float kLeftOut = -0.0f;       // a probability the exact P.V leaves out (see marked_exp_sum)
// A task takes up to this many query rows in blocks of block_q, so that each K and V tile
// is packed once for all of them (block_q only partitions rows: it does not change a bit).
constexpr int64_t kTaskRows = 256;
constexpr int64_t kMaxGroup = 16;

/// Query blocks per task.
int64_t task_group(int64_t bq) { return std::clamp<int64_t>(kTaskRows / bq, 1, kMaxGroup); }

/// One worker's tiles.
struct FlashTiles {
    float *q;            // bf16 Q widened (unused for f32)
    float *vpan;         // V of the key tile in panels (tile_gemm.hpp)
    float *kt;           // K^T of the key tile in panels (tile_gemm.hpp)
    float *s;            // scores, then probabilities [bq x bk]
    float *acc;          // [bq x Dv]
    float *m, *l;        // running max and sum per row
    unsigned char *nan;  // row saw a NaN score
    uint32_t *qp, *kp, *vp, *pp;  // pair-packed bf16 Q, K, V (in q, kt, vpan) and P (vdpbf16ps path)
    unsigned char *stage;  // paged: a key tile's K or V rows gathered from the pages it spans
};

/// Row strides of the pair-packed K and V tiles: whole 32-lane register tiles.
int64_t round32(int64_t n) { return (n + 31) / 32 * 32; }

/// The same bytes on every CPU, so the memory gate's baseline holds on every machine: the
/// vdpbf16ps path keeps its pair-packed Q, K and V in the f32 path's Q, K^T and V buffers
/// (each at most as large) and only P pairs have their own.
class FlashLayout {
public:
    FlashLayout(const attngate_problem &p, int64_t bq, int64_t bk) {
        const bool bf16 = p.dtype == ATTNGATE_DTYPE_BF16;
        stage_ = layout_.add(p.paged ? bk * std::max(p.head_dim, p.head_dim_v) : 0, operand_bytes(p.dtype));
        q_ = layout_.add(bf16 ? bq * p.head_dim : 0, sizeof(float));
        kt_ = layout_.add(kt_panel_floats(bk, p.head_dim), sizeof(float));
        v_ = layout_.add(v_panel_floats(bk, p.head_dim_v), sizeof(float));
        pp_ = layout_.add(bf16 ? bq * ((bk + 1) / 2) : 0, sizeof(uint32_t));
        s_ = layout_.add(bq * bk, sizeof(float));
        acc_ = layout_.add(bq * p.head_dim_v, sizeof(float));
        m_ = layout_.add(bq, sizeof(float));
        l_ = layout_.add(bq, sizeof(float));
        nan_ = layout_.add(bq, 1);
    }
    size_t bytes() const { return layout_.size(); }
    FlashTiles tiles(const WorkerScratch &ws, int w) const {
        return {ws.at<float>(w, q_),   ws.at<float>(w, v_),  ws.at<float>(w, kt_),
                ws.at<float>(w, s_),   ws.at<float>(w, acc_), ws.at<float>(w, m_),
                ws.at<float>(w, l_),   ws.at<unsigned char>(w, nan_),
                ws.at<uint32_t>(w, q_), ws.at<uint32_t>(w, kt_), ws.at<uint32_t>(w, v_), ws.at<uint32_t>(w, pp_),
                ws.at<unsigned char>(w, stage_)};
    }

private:
    ScratchLayout layout_;
    size_t stage_, q_, kt_, v_, pp_, s_, acc_, m_, l_, nan_;
};

/// One (batch, head, query block) task.
class FlashTask {
public:
    FlashTask(const ProblemView &view, const PagedRows *paged, const RowOps &ops, const TileGemm &gemm, const PairGemm *pairs,
              int64_t bq, int64_t bk, const FlashTiles &t)
        : view_(view), p_(view.problem()), paged_(paged), ops_(ops), gemm_(gemm), pairs_(pairs), bq_(bq), bk_(bk), t_(t) {}

    /// Query blocks [q0, q0 + group x bq) of head h: they share each packed K and V tile.
    void run(int64_t b, int64_t h, int64_t q0, int64_t group) {
        const int64_t rows = std::min(group * bq_, p_.seq_q - q0), hk = view_.kv_head(h);
        const int64_t qstride = p_.heads_q * p_.head_dim;
        const Rows q = pairs_ ? Rows{nullptr, 0}
                              : operand_rows(p_.q, p_.dtype, view_.q_index(b, q0, h), rows, p_.head_dim, qstride, t_.q, ops_);
        if (pairs_) pack_row_pairs(bf16_at(p_.q, view_.q_index(b, q0, h)), rows, p_.head_dim, qstride, t_.qp);
        std::fill(t_.m, t_.m + rows, kNegInf);
        std::fill(t_.l, t_.l + rows, 0.0f);
        std::fill(t_.nan, t_.nan + rows, 0);
        std::fill(t_.acc, t_.acc + rows * p_.head_dim_v, 0.0f);
        const int64_t blocks = (rows + bq_ - 1) / bq_;
        for (int64_t k0 = 0; k0 < p_.seq_k; k0 += bk_) {
            const int64_t k1 = std::min(k0 + bk_, p_.seq_k);
            TileMask masks[kMaxGroup];
            bool any = false;
            for (int64_t g = 0; g < blocks; ++g) {
                masks[g] = classify_tile(view_, b, q0 + g * bq_, q0 + std::min((g + 1) * bq_, rows), k0, k1);
                any = any || masks[g] != TileMask::Skip;
            }
            if (!any) continue;
            const bool v_finite = pack_key_tile(b, hk, k0, k1 - k0);
            for (int64_t g = 0; g < blocks; ++g)
                if (masks[g] != TileMask::Skip)
                    fold_key_tile(b, h, q0, g * bq_, std::min(bq_, rows - g * bq_), q, k0, k1 - k0,
                                  masks[g] == TileMask::Partial, v_finite);
        }
        for (int64_t r = 0; r < rows; ++r) {
            float *out = p_.out + view_.out_index(b, q0 + r, h);
            const int64_t dv = p_.head_dim_v;
            if (t_.nan[r]) std::fill(out, out + dv, std::numeric_limits<float>::quiet_NaN());
            else if (t_.m[r] == kNegInf) std::fill(out, out + dv, 0.0f);
            else ops_.divide(t_.acc + r * dv, dv, t_.l[r], out);
        }
    }

private:
    /// exp_sum for tiles whose V is not finite: a key with a -inf score (masked, or a -inf
    /// bias) gets kLeftOut, which no exp gives, so the exact P.V can leave it out.
    static float marked_exp_sum(float *s, int64_t n, float m, bool round_bf16) {
        float l = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
            if (s[j] == kNegInf) {
                s[j] = kLeftOut;
                continue;
            }
            const float pj = std::exp(s[j] - m);
            l += pj;
            s[j] = round_bf16 ? round_to_bf16(pj) : pj;
        }
        return l;
    }

    static const uint16_t *bf16_at(const void *tensor, int64_t index) { return static_cast<const uint16_t *>(tensor) + index; }

    /// Keys [k0, k0 + n) of kv head hk of K (or V) and their row stride in elements: where
    /// they lie, or, on a paged problem whose tile spans pages, gathered into the stage.
    std::pair<const void *, int64_t> tile_rows(bool value, int64_t b, int64_t hk, int64_t k0, int64_t n) const {
        const int64_t dim = value ? p_.head_dim_v : p_.head_dim;
        if (!paged_) {
            const int64_t at = value ? view_.v_index(b, k0, hk) : view_.k_index(b, k0, hk);
            return {static_cast<const unsigned char *>(value ? p_.v : p_.k) + static_cast<size_t>(at) * operand_bytes(p_.dtype),
                    p_.heads_kv * dim};
        }
        int64_t run = 0;
        const unsigned char *rows = paged_->row(value, k0, hk, &run);
        if (run >= n) return {rows, p_.heads_kv * dim};
        paged_->gather(value, k0, n, hk, t_.stage);
        return {t_.stage, dim};
    }

    /// Packs keys [k0, k0 + n) of K and V for the products; returns whether V is finite.
    /// A NaN or infinity in V times a probability of 0 is NaN, so when V is not finite a
    /// key the mask (or a -inf score) removes must stay out: those tiles take the exact path.
    /// (K is packed before V's rows are found: on a paged problem they share the stage.)
    bool pack_key_tile(int64_t b, int64_t hk, int64_t k0, int64_t n) {
        const int64_t d = p_.head_dim, dv = p_.head_dim_v;
        const auto [k, kstride] = tile_rows(false, b, hk, k0, n);
        if (pairs_) pack_k_pairs(static_cast<const uint16_t *>(k), n, d, kstride, round32(bk_), t_.kp);
        else if (p_.dtype == ATTNGATE_DTYPE_BF16) pack_kt_bf16(static_cast<const uint16_t *>(k), n, d, kstride, t_.kt);
        else pack_kt(static_cast<const float *>(k), n, d, kstride, t_.kt);
        const auto [v, vstride] = tile_rows(true, b, hk, k0, n);
        if (pairs_) {
            const auto *v16 = static_cast<const uint16_t *>(v);
            const bool finite = bf16_rows_finite(v16, n, dv, vstride);
            if (finite) pack_v_pairs(v16, n, dv, vstride, round32(dv), t_.vp);
            else pack_v_bf16(v16, n, dv, vstride, t_.vpan, n);
            return finite;
        }
        if (p_.dtype == ATTNGATE_DTYPE_BF16) return pack_v_bf16(static_cast<const uint16_t *>(v), n, dv, vstride, t_.vpan, n);
        return pack_v(static_cast<const float *>(v), n, dv, vstride, t_.vpan, n);
    }

    /// Folds the packed keys [k0, k0 + n) into the running state of the task's rows
    /// [r0, r0 + rows) (query rows q0 + r0 on).
    void fold_key_tile(int64_t b, int64_t h, int64_t q0, int64_t r0, int64_t rows, const Rows &q, int64_t k0, int64_t n,
                       bool partial, bool v_finite) {
        const int64_t d = p_.head_dim, dv = p_.head_dim_v, d2 = (d + 1) / 2, n2 = (n + 1) / 2, bk2 = (bk_ + 1) / 2;
        const bool bf16 = p_.dtype == ATTNGATE_DTYPE_BF16;
        float *s0 = t_.s + r0 * bk_, *acc0 = t_.acc + r0 * dv;
        if (pairs_) pairs_->qk(rows, n, d2, t_.qp + r0 * d2, t_.kp, round32(bk_), s0, bk_);
        else gemm_.qk(rows, n, d, q.data + r0 * q.ld, q.ld, t_.kt, s0, bk_);
        for (int64_t r = r0; r < r0 + rows; ++r) {
            float *s = t_.s + r * bk_;
            finish_row(view_, ops_, s, b, h, q0 + r, k0, n, partial);
            bool nan = false;
            const float m_new = std::max(t_.m[r], ops_.max(s, n, &nan));
            if (nan) t_.nan[r] = 1;
            if (m_new == kNegInf) {  // nothing unmasked yet: contributes nothing
                std::fill(s, s + n, kLeftOut);
                continue;
            }
            const float alpha = std::exp(t_.m[r] - m_new);
            const float l_blk = v_finite ? ops_.exp_sum(s, n, m_new, bf16) : marked_exp_sum(s, n, m_new, bf16);
            if (alpha != 1.0f) ops_.scale(t_.acc + r * dv, dv, alpha);
            t_.l[r] = t_.l[r] * alpha + l_blk;
            t_.m[r] = m_new;
        }
        if (v_finite && pairs_) {
            pack_float_row_pairs(s0, rows, n, bk_, t_.pp + r0 * bk2);
            pairs_->pv(rows, dv, n2, t_.pp + r0 * bk2, t_.vp, round32(dv), acc0, dv);
            return;
        }
        if (v_finite) {
            gemm_.pv(rows, dv, n, s0, bk_, t_.vpan, n, acc0, dv);
            return;
        }
        for (int64_t r = 0; r < rows; ++r) {
            float *a = acc0 + r * dv;
            for (int64_t j = 0; j < n; ++j) {
                const float pj = s0[r * bk_ + j];
                if (pj == 0.0f && std::signbit(pj)) continue;  // kLeftOut
                for (int64_t e = 0; e < dv; ++e) a[e] += pj * v_panel_at(t_.vpan, n, j, e);
            }
        }
    }

    const ProblemView &view_;
    const attngate_problem &p_;
    const PagedRows *paged_;  // null: a dense problem
    const RowOps &ops_;
    const TileGemm &gemm_;
    const PairGemm *pairs_;  // null: f32 products
    int64_t bq_, bk_;
    FlashTiles t_;
};

/// What every task of one call shares.
struct FlashSetup {
    explicit FlashSetup(const attngate_problem &p)
        : bq(p.block_q > 0 ? p.block_q : kDefaultBlock), bk(p.block_k > 0 ? p.block_k : kDefaultBlock),
          group(task_group(bq)), task_rows(group * bq), ops(active_row_ops()), gemm(tile_gemm(active_isa())),
          pairs(p.dtype == ATTNGATE_DTYPE_BF16 ? active_pair_gemm() : nullptr), layout(p, task_rows, bk) {}
    int64_t q_tasks(int64_t seq_q) const { return (seq_q + task_rows - 1) / task_rows; }

    int64_t bq, bk, group, task_rows;
    const RowOps &ops;
    const TileGemm &gemm;
    const PairGemm *pairs;
    // Tiles only, as a TPU kernel holds them in VMEM: per worker, the workspace depends on
    // the block sizes and head dims, never on the sequence lengths.
    FlashLayout layout;
};

/// Every (batch, head, query rows) task of a dense problem, or of one sequence of a paged
/// one (its K and V rows through `paged`).
void flash_tasks(const attngate_problem &p, const PagedRows *paged, const FlashSetup &s, const WorkerScratch &scratch,
                 ThreadPool *pool) {
    const ProblemView view(p);
    const int64_t q_tasks = s.q_tasks(p.seq_q);
    for_each_task(pool, p.batch * p.heads_q * q_tasks, [&](int64_t task, int worker) {
        FlashTask t(view, paged, s.ops, s.gemm, s.pairs, s.bq, s.bk, s.layout.tiles(scratch, worker));
        const int64_t qt = task % q_tasks, bh = task / q_tasks;
        t.run(bh / p.heads_q, bh % p.heads_q, qt * s.task_rows, s.group);
    });
}

int flash_run(const attngate_kernel *, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const FlashSetup setup(p);
    int64_t most_q = p.seq_q;  // paged: the longest q_len sets how many workers a sequence uses
    if (p.paged) {
        most_q = 0;
        for (int64_t b = 0; b < p.batch; ++b) most_q = std::max<int64_t>(most_q, p.paged->cu_q_lens[b + 1] - p.paged->cu_q_lens[b]);
    }
    ThreadPool *pool = pool_of(p);
    const int workers = workers_for(pool, (p.paged ? 1 : p.batch) * p.heads_q * setup.q_tasks(most_q));
    WorkerScratch scratch(p.allocator, workers, setup.layout.bytes());
    if (!scratch.ok()) return fail(err, n, "workspace allocation failed");
    if (!p.paged) {
        flash_tasks(p, nullptr, setup, scratch, pool);
        return 0;
    }
    for (int64_t b = 0; b < p.batch; ++b) {  // each sequence reads its pages where they lie
        const PagedRows rows(p, b);
        flash_tasks(sequence_problem(p, b), &rows, setup, scratch, pool);
    }
    return 0;
}

}  // namespace

extern const attngate_kernel flash_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "flash",
    /* .version     = */ "2.1.0",
    /* .description = */ "tiled online softmax, block_q = block_k = 128 by default, masked blocks skipped; SIMD tiles, threads; "
                          "paged: key tiles read from the pages",
    /* .features    = */ ATTNGATE_FEATURE_ALL_PAGED,
    /* .workspace   = */ ATTNGATE_WORKSPACE_CONSTANT,
    /* .supports    = */ nullptr,
    /* .run         = */ flash_run,
    /* .user        = */ nullptr,
    /* .init        = */ instance_init,
    /* .free        = */ instance_free,
};

}  // namespace attngate::kernels
