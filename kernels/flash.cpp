// The flash kernel: tiled online softmax as in the Pallas TPU flash-attention kernel.
// Per query block it keeps a running max m, running sum l and a rescaled accumulator per
// row, visits key blocks in order and skips blocks the mask removes entirely. Its
// workspace depends on the block sizes, never on Sk.
#include <cmath>
#include <limits>

#include "attention_common.hpp"

namespace attngate::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kDefaultBlock = 128;  // the TPU kernel's default block_q and block_k

/// True when no (row, key) pair of the tile survives masking.
bool tile_fully_masked(const ProblemView &view, int64_t b, int64_t q0, int64_t q1,
                       int64_t k0, int64_t k1) {
    int64_t lo_first, hi_first, lo_last, hi_last;
    view.key_range(q0, lo_first, hi_first);
    view.key_range(q1 - 1, lo_last, hi_last);
    // Key ranges move right monotonically with the row, so the tile's keys are covered
    // by [lo of the first row, hi of the last row).
    if (k1 <= lo_first || k0 >= hi_last) return true;
    if (!view.problem().segment_ids_q) return false;
    for (int64_t i = q0; i < q1; ++i)
        for (int64_t j = k0; j < k1; ++j)
            if (view.allowed(b, i, j)) return false;
    return true;
}

/// Per-row online-softmax state of one query tile.
struct TileState {
    float *m, *l, *acc;
    unsigned char *row_nan;
};

/// Folds one key tile into the running state of every row of the query tile.
void fold_key_tile(const attngate_problem &p, const ProblemView &view, int64_t b, int64_t h, int64_t q0, int64_t q1,
                   int64_t k0, int64_t k1, const float *qt, const float *kt, const float *vt, float *s, int64_t bk,
                   TileState &st) {
    for (int64_t i = q0; i < q1; ++i) {
        const int64_t r = i - q0;
        float *srow = s + r * bk;
        float m_blk = kNegInf;
        for (int64_t j = k0; j < k1; ++j) {
            float &sj = srow[j - k0];
            if (!view.allowed(b, i, j)) {
                sj = kNegInf;
                continue;
            }
            sj = view.finish_score(dot_f32(qt + r * p.head_dim, kt + (j - k0) * p.head_dim, p.head_dim), b, h, i, j);
            if (std::isnan(sj)) st.row_nan[r] = 1;
            else m_blk = std::max(m_blk, sj);
        }
        const float m_new = std::max(st.m[r], m_blk);
        if (m_new == kNegInf) continue;  // nothing unmasked yet
        const float alpha = std::exp(st.m[r] - m_new);
        float *a = st.acc + r * p.head_dim_v;
        for (int64_t d = 0; d < p.head_dim_v; ++d) a[d] *= alpha;
        float l_blk = 0.0f;
        for (int64_t j = k0; j < k1; ++j) {
            const float sj = srow[j - k0];
            if (sj == kNegInf || std::isnan(sj)) continue;
            const float pj = std::exp(sj - m_new);
            l_blk += pj;
            const float pr = operand_round(pj, p.dtype);
            const float *v = vt + (j - k0) * p.head_dim_v;
            for (int64_t d = 0; d < p.head_dim_v; ++d) a[d] += pr * v[d];
        }
        st.l[r] = st.l[r] * alpha + l_blk;
        st.m[r] = m_new;
    }
}

int flash_run(const attngate_kernel *, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const int64_t bq = p.block_q > 0 ? p.block_q : kDefaultBlock;
    const int64_t bk = p.block_k > 0 ? p.block_k : kDefaultBlock;
    const ProblemView view(p);
    // Tiles only, as a TPU kernel holds them in VMEM: the workspace depends on the block
    // sizes and head dims, never on the sequence lengths.
    Workspace<float> qt(p.allocator, bq * p.head_dim), kt(p.allocator, bk * p.head_dim), vt(p.allocator, bk * p.head_dim_v);
    Workspace<float> m(p.allocator, bq), l(p.allocator, bq), s(p.allocator, bq * bk), acc(p.allocator, bq * p.head_dim_v);
    Workspace<unsigned char> row_nan(p.allocator, bq);
    if (!qt.ok() || !kt.ok() || !vt.ok() || !m.ok() || !l.ok() || !s.ok() || !acc.ok() || !row_nan.ok())
        return fail(err, n, "workspace allocation failed");
    TileState st{m.data(), l.data(), acc.data(), row_nan.data()};

    for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t h = 0; h < p.heads_q; ++h) {
            const int64_t hk = view.kv_head(h);
            for (int64_t q0 = 0; q0 < p.seq_q; q0 += bq) {
                const int64_t q1 = std::min(q0 + bq, p.seq_q);
                for (int64_t i = q0; i < q1; ++i) {
                    const int64_t r = i - q0;
                    widen_at(p.q, p.dtype, view.q_index(b, i, h), p.head_dim, qt.data() + r * p.head_dim);
                    m[r] = kNegInf;
                    l[r] = 0.0f;
                    row_nan[r] = 0;
                    for (int64_t d = 0; d < p.head_dim_v; ++d) acc[r * p.head_dim_v + d] = 0.0f;
                }
                for (int64_t k0 = 0; k0 < p.seq_k; k0 += bk) {
                    const int64_t k1 = std::min(k0 + bk, p.seq_k);
                    if (tile_fully_masked(view, b, q0, q1, k0, k1)) continue;
                    for (int64_t j = k0; j < k1; ++j) {
                        widen_at(p.k, p.dtype, view.k_index(b, j, hk), p.head_dim, kt.data() + (j - k0) * p.head_dim);
                        widen_at(p.v, p.dtype, view.v_index(b, j, hk), p.head_dim_v, vt.data() + (j - k0) * p.head_dim_v);
                    }
                    fold_key_tile(p, view, b, h, q0, q1, k0, k1, qt.data(), kt.data(), vt.data(), s.data(), bk, st);
                }
                for (int64_t i = q0; i < q1; ++i) {
                    const int64_t r = i - q0;
                    float *out = p.out + view.out_index(b, i, h);
                    const float *a = acc.data() + r * p.head_dim_v;
                    for (int64_t d = 0; d < p.head_dim_v; ++d) {
                        if (row_nan[r]) out[d] = std::numeric_limits<float>::quiet_NaN();
                        else if (m[r] == kNegInf) out[d] = 0.0f;
                        else out[d] = a[d] / l[r];
                    }
                }
            }
        }
    }
    return 0;
}

}  // namespace

extern const attngate_kernel flash_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "flash",
    /* .version     = */ "1.0.0",
    /* .description = */ "tiled online softmax, block_q = block_k = 128 by default, masked blocks skipped",
    /* .features    = */ ATTNGATE_FEATURE_ALL,
    /* .workspace   = */ ATTNGATE_WORKSPACE_CONSTANT,
    /* .supports    = */ nullptr,
    /* .run         = */ flash_run,
    /* .user        = */ nullptr,
    /* .init        = */ nullptr,
    /* .free        = */ nullptr,
};

}  // namespace attngate::kernels
