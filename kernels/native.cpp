// The native kernel: materialises the full Sq x Sk score matrix per head, then softmax,
// then P·V, as XLA's default (non-fused) attention does. Workspace grows with Sq·Sk.
#include <cmath>
#include <limits>

#include "attention_common.hpp"

namespace attngate::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int native_run(const attngate_kernel *, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const ProblemView view(p);
    WidenedOperands ops(p);
    Workspace<float> s(p.allocator, p.seq_q * p.seq_k);
    if (!ops.ok() || !s.ok()) return fail(err, n, "workspace allocation failed");

    for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t h = 0; h < p.heads_q; ++h) {
            const int64_t hk = view.kv_head(h);
            // Scores for the whole head; masked entries are -inf.
            for (int64_t i = 0; i < p.seq_q; ++i) {
                const float *q = ops.q.data() + view.q_index(b, i, h);
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    float &sij = s[i * p.seq_k + j];
                    if (!view.allowed(b, i, j)) {
                        sij = kNegInf;
                        continue;
                    }
                    const float *k = ops.k.data() + view.k_index(b, j, hk);
                    sij = view.finish_score(dot_f32(q, k, p.head_dim), b, h, i, j);
                }
            }
            // Row softmax, normalised, rounded to the operand dtype, then P·V.
            for (int64_t i = 0; i < p.seq_q; ++i) {
                float *row = s.data() + i * p.seq_k;
                float *out = p.out + view.out_index(b, i, h);
                float m = kNegInf;
                bool has_nan = false;
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    if (std::isnan(row[j])) has_nan = true;
                    else m = std::max(m, row[j]);
                }
                if (has_nan || m == kNegInf) {
                    const float fill = has_nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
                    for (int64_t d = 0; d < p.head_dim_v; ++d) out[d] = fill;
                    continue;
                }
                float l = 0.0f;
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    row[j] = row[j] == kNegInf ? kNegInf : std::exp(row[j] - m);
                    if (row[j] != kNegInf) l += row[j];
                }
                for (int64_t j = 0; j < p.seq_k; ++j)
                    if (row[j] != kNegInf) row[j] = operand_round(row[j] / l, p.dtype);
                for (int64_t d = 0; d < p.head_dim_v; ++d) out[d] = 0.0f;
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    if (row[j] == kNegInf) continue;
                    const float *v = ops.v.data() + view.v_index(b, j, hk);
                    for (int64_t d = 0; d < p.head_dim_v; ++d) out[d] += row[j] * v[d];
                }
            }
        }
    }
    return 0;
}

}  // namespace

extern const attngate_kernel native_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "native",
    /* .version     = */ "1.0.0",
    /* .description = */ "full score matrix per head, softmax, then P·V (XLA's default attention)",
    /* .features    = */ ATTNGATE_FEATURE_ALL,
    /* .workspace   = */ ATTNGATE_WORKSPACE_QUADRATIC,
    /* .supports    = */ nullptr,
    /* .run         = */ native_run,
    /* .user        = */ nullptr,
    /* .init        = */ nullptr,
    /* .free        = */ nullptr,
};

}  // namespace attngate::kernels
