// The native kernel: materialises the full Sq x Sk score matrix per head, then softmax,
// then P·V, as XLA's default (non-fused) attention does. Workspace grows with Sq·Sk.
//
// Speed: heads are done one after another; within a head, blocks of query rows go to the
// instance's threads, each running S = Q K^T over the keys its rows can see, the row
// softmax (vector row operations) and out = P V (FMA microkernels of the CPU's path,
// tile_gemm.hpp) while its slab of the score
// matrix is still in cache. A block's result does not depend on the thread that runs it.
#include <cmath>
#include <limits>

#include "attention_tiles.hpp"
#include "paged.hpp"
#include "tile_gemm.hpp"

namespace attngate::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kRowBlock = 64;     // query rows per task
constexpr int64_t kPackBlock = 256;   // keys per task when K^T and V are packed (whole panels)

/// Workspace of one call: the score matrix, the head's K^T and V in panels
/// (tile_gemm.hpp), and per worker the widened query rows and the keys a NaN-safe P.V
/// must leave out.
class NativeWorkspace {
public:
    NativeWorkspace(const attngate_problem &p, int workers)
        : scores_(p.allocator, p.seq_q * p.seq_k), v_(p.allocator, v_panel_floats(p.seq_k, p.head_dim_v)),
          kt_(p.allocator, kt_panel_floats(p.seq_k, p.head_dim)),
          v_finite_(p.allocator, (p.seq_k + kPackBlock - 1) / kPackBlock),
          q_(layout_.add(bf16(p) ? kRowBlock * p.head_dim : 0, sizeof(float))), skip_(layout_.add(p.seq_k, 1)),
          per_worker_(p.allocator, workers, layout_.size()) {}
    bool ok() const { return scores_.ok() && v_.ok() && kt_.ok() && v_finite_.ok() && per_worker_.ok(); }
    float *scores() { return scores_.data(); }
    float *v() { return v_.data(); }
    float *kt() { return kt_.data(); }
    unsigned char *v_finite() { return v_finite_.data(); }
    float *q(int w) const { return per_worker_.at<float>(w, q_); }
    unsigned char *skip(int w) const { return per_worker_.at<unsigned char>(w, skip_); }

private:
    static bool bf16(const attngate_problem &p) { return p.dtype == ATTNGATE_DTYPE_BF16; }
    Workspace<float> scores_, v_, kt_;
    Workspace<unsigned char> v_finite_;
    ScratchLayout layout_;  // declared before the offsets and per_worker_, which it sizes
    size_t q_, skip_;
    WorkerScratch per_worker_;
};

class NativeHead {
public:
    NativeHead(const ProblemView &view, const RowOps &ops, const TileGemm &gemm, NativeWorkspace &ws, int64_t b, int64_t h)
        : view_(view), p_(view.problem()), ops_(ops), gemm_(gemm), ws_(ws), b_(b), h_(h), hk_(view.kv_head(h)) {}

    /// Packs keys [k0, k0 + kPackBlock) of K^T and of V into the head's buffers; notes
    /// whether V is finite there.
    void prepare_keys(int64_t chunk) {
        const int64_t k0 = chunk * kPackBlock, n = std::min(kPackBlock, p_.seq_k - k0);
        const int64_t d = p_.head_dim, ki = view_.k_index(b_, k0, hk_);
        float *kt = ws_.kt() + k0 * d;  // k0 is a whole number of panels
        if (p_.dtype == ATTNGATE_DTYPE_BF16) pack_kt_bf16(static_cast<const uint16_t *>(p_.k) + ki, n, d, p_.heads_kv * d, kt);
        else pack_kt(static_cast<const float *>(p_.k) + ki, n, d, p_.heads_kv * d, kt);
        const int64_t dv = p_.head_dim_v, stride = p_.heads_kv * dv, vi = view_.v_index(b_, k0, hk_);
        float *dst = ws_.v() + k0 * kPanel;
        ws_.v_finite()[chunk] = p_.dtype == ATTNGATE_DTYPE_BF16
                                    ? pack_v_bf16(static_cast<const uint16_t *>(p_.v) + vi, n, dv, stride, dst, p_.seq_k)
                                    : pack_v(static_cast<const float *>(p_.v) + vi, n, dv, stride, dst, p_.seq_k);
    }

    void set_v_finite(bool f) { v_finite_ = f; }

    /// Query rows [q0, q0 + kRowBlock): scores, softmax, then P.V into the output.
    void row_block(int64_t q0, int worker) {
        const int64_t q1 = std::min(q0 + kRowBlock, p_.seq_q), rows = q1 - q0;
        const int64_t d = p_.head_dim, dv = p_.head_dim_v, sk = p_.seq_k, ldo = p_.heads_q * dv;
        int64_t klo, unused, khi;
        view_.key_range(q0, klo, unused);
        view_.key_range(q1 - 1, unused, khi);
        float *out = p_.out + view_.out_index(b_, q0, h_);
        if (khi <= klo) {  // no row of the block sees a key
            for (int64_t r = 0; r < rows; ++r) std::fill(out + r * ldo, out + r * ldo + dv, 0.0f);
            return;
        }
        klo = klo / kPanel * kPanel;  // K^T panels start there; the keys before lo stay masked
        const int64_t n = khi - klo;
        const Rows q = operand_rows(p_.q, p_.dtype, view_.q_index(b_, q0, h_), rows, d, p_.heads_q * d, ws_.q(worker), ops_);
        const float *vp = ws_.v() + klo * kPanel;  // panels of Sk rows, from key klo
        float *s = ws_.scores() + q0 * sk + klo;  // the block's slab, keys [klo, khi)
        gemm_.qk(rows, n, d, q.data, q.ld, ws_.kt() + klo * d, s, sk);

        enum Fill : unsigned char { Keep, Zero, Nan };
        unsigned char fill[kRowBlock];
        for (int64_t r = 0; r < rows; ++r) {
            float *row = s + r * sk;
            const int64_t i = q0 + r;
            finish_row(view_, ops_, row, b_, h_, i, klo, n, true);
            bool nan = false;
            const float m = ops_.max(row, n, &nan);
            fill[r] = nan ? Nan : m == kNegInf ? Zero : Keep;
            if (fill[r] != Keep) {
                std::fill(row, row + n, 0.0f);
                continue;
            }
            unsigned char *skip = ws_.skip(worker);
            if (!v_finite_)
                for (int64_t j = 0; j < n; ++j) skip[j] = row[j] == kNegInf;
            const float l = ops_.exp_sum(row, n, m, false);
            ops_.normalize(row, n, l, p_.dtype == ATTNGATE_DTYPE_BF16);
            if (!v_finite_) exact_pv(row, skip, n, vp, out + r * ldo);
        }
        if (v_finite_) {
            for (int64_t r = 0; r < rows; ++r) std::fill(out + r * ldo, out + r * ldo + dv, 0.0f);
            gemm_.pv(rows, dv, n, s, sk, vp, sk, out, ldo);
        }
        for (int64_t r = 0; r < rows; ++r)
            if (fill[r] != Keep)
                std::fill(out + r * ldo, out + r * ldo + dv, fill[r] == Nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
    }

private:
    /// P.V leaving out masked keys and -inf scores, so a NaN in their V stays out.
    void exact_pv(const float *prob, const unsigned char *skip, int64_t n, const float *vp, float *out) const {
        std::fill(out, out + p_.head_dim_v, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
            if (skip[j]) continue;
            for (int64_t e = 0; e < p_.head_dim_v; ++e) out[e] += prob[j] * v_panel_at(vp, p_.seq_k, j, e);
        }
    }

    const ProblemView &view_;
    const attngate_problem &p_;
    const RowOps &ops_;
    const TileGemm &gemm_;
    NativeWorkspace &ws_;
    int64_t b_, h_, hk_;
    bool v_finite_ = true;
};

int native_dense(const attngate_problem &p, char *err, size_t n) {
    const ProblemView view(p);
    const RowOps &ops = active_row_ops();
    const TileGemm &gemm = tile_gemm(active_isa());
    ThreadPool *pool = pool_of(p);
    const int64_t row_blocks = (p.seq_q + kRowBlock - 1) / kRowBlock;
    const int64_t key_chunks = (p.seq_k + kPackBlock - 1) / kPackBlock;
    NativeWorkspace ws(p, workers_for(pool, row_blocks));
    if (!ws.ok()) return fail(err, n, "workspace allocation failed");
    for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t h = 0; h < p.heads_q; ++h) {
            NativeHead head(view, ops, gemm, ws, b, h);
            for_each_task(pool, key_chunks, [&](int64_t chunk, int) { head.prepare_keys(chunk); });
            bool finite = true;
            for (int64_t c = 0; c < key_chunks; ++c) finite = finite && ws.v_finite()[c];
            head.set_v_finite(finite);
            for_each_task(pool, row_blocks, [&](int64_t block, int worker) { head.row_block(block * kRowBlock, worker); });
        }
    }
    return 0;
}

/// A paged problem gathers each sequence into dense K and V, then takes the dense path.
int native_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {
    if (!p->paged) return native_dense(*p, err, n);
    return for_each_gathered_sequence(*p, err, n, [&](const attngate_problem &s, int64_t) { return native_dense(s, err, n); });
}

}  // namespace

extern const attngate_kernel native_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "native",
    /* .version     = */ "2.1.0",
    /* .description = */ "full score matrix per head, softmax, then P·V (XLA's default attention); SIMD tiles, threads; "
                          "paged: each sequence gathered dense",
    /* .features    = */ ATTNGATE_FEATURE_ALL_PAGED,
    /* .workspace   = */ ATTNGATE_WORKSPACE_QUADRATIC,
    /* .supports    = */ nullptr,
    /* .run         = */ native_run,
    /* .user        = */ nullptr,
    /* .init        = */ instance_init,
    /* .free        = */ instance_free,
};

}  // namespace attngate::kernels
