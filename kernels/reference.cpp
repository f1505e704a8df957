// The reference kernel: plain loops with float64 accumulation, the oracle for goldens.
// Its float32 twin is the "straightforward" implementation that calibrates tolerances.
#include <cmath>
#include <limits>

#include "attention_common.hpp"
#include "attngate/builtin_kernels.hpp"
#include "paged.hpp"

namespace attngate::kernels {
namespace {

template <typename T>
constexpr T kInf = std::numeric_limits<T>::infinity();

/// One row-by-row softmax attention at accumulation type Acc. When Acc is float the
/// normalised probabilities are rounded to the operand dtype before P·V.
template <typename Acc, typename Out>
int naive_forward(const attngate_problem &p, Out *out_base, char *err, size_t err_len) {
    const ProblemView view(p);
    WidenedOperands ops(p);
    Workspace<Acc> scores(p.allocator, p.seq_k);
    Workspace<Acc> probs(p.allocator, p.seq_k);
    Workspace<Acc> acc(p.allocator, p.head_dim_v);
    if (!ops.ok() || !scores.ok() || !probs.ok() || !acc.ok()) return fail(err, err_len, "workspace allocation failed");
    const bool round_p = std::is_same_v<Acc, float>;

    for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t h = 0; h < p.heads_q; ++h) {
            const int64_t hk = view.kv_head(h);
            for (int64_t i = 0; i < p.seq_q; ++i) {
                Out *out = out_base + view.out_index(b, i, h);
                const float *q = ops.q.data() + view.q_index(b, i, h);
                int64_t lo, hi;
                view.key_range(i, lo, hi);
                Acc m = -kInf<Acc>;
                bool any = false, has_nan = false;
                for (int64_t j = lo; j < hi; ++j) {
                    if (!view.segment_allowed(b, i, j)) continue;
                    const float *k = ops.k.data() + view.k_index(b, j, hk);
                    Acc dot = 0;
                    for (int64_t d = 0; d < p.head_dim; ++d)
                        dot += static_cast<Acc>(q[d]) * static_cast<Acc>(k[d]);
                    const Acc s = view.finish_score(dot, b, h, i, j);
                    scores[j] = s;
                    any = true;
                    if (std::isnan(s)) has_nan = true;
                    else if (s > m) m = s;
                }
                if (!any || (!has_nan && m == -kInf<Acc>)) {
                    for (int64_t d = 0; d < p.head_dim_v; ++d) out[d] = 0;
                    continue;
                }
                Acc l = 0;
                for (int64_t j = lo; j < hi; ++j) {
                    if (!view.segment_allowed(b, i, j)) continue;
                    probs[j] = std::exp(scores[j] - m);
                    l += probs[j];
                }
                // out[d] = sum over j of p_j * v[j][d], each d's sum in key order. Keys outer,
                // d inner: each V row is read once, in order, and the head_dim_v sums are
                // independent (the same additions in the same order as a d-outer loop).
                for (int64_t d = 0; d < p.head_dim_v; ++d) acc[d] = 0;
                for (int64_t j = lo; j < hi; ++j) {
                    // A -inf score (a -inf bias) masks its key like the mask does.
                    if (!view.segment_allowed(b, i, j) || scores[j] == -kInf<Acc>) continue;
                    const Acc pj = round_p ? static_cast<Acc>(operand_round(static_cast<float>(probs[j] / l), p.dtype)) : probs[j];
                    const float *v = ops.v.data() + view.v_index(b, j, hk);
                    for (int64_t d = 0; d < p.head_dim_v; ++d) acc[d] += pj * static_cast<Acc>(v[d]);
                }
                for (int64_t d = 0; d < p.head_dim_v; ++d) out[d] = static_cast<Out>(round_p ? acc[d] : acc[d] / l);
            }
        }
    }
    return 0;
}

/// naive_forward on the problem, or on each sequence of a paged one with its pages gathered.
template <typename Acc, typename Out>
int forward(const attngate_problem &p, Out *out, char *err, size_t err_len) {
    if (!p.paged) return naive_forward<Acc>(p, out, err, err_len);
    return for_each_gathered_sequence(p, err, err_len, [&](const attngate_problem &s, int64_t b) {
        return naive_forward<Acc>(s, out + p.paged->cu_q_lens[b] * p.heads_q * p.head_dim_v, err, err_len);
    });
}

int reference_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {
    return forward<double>(*p, p->out, err, n);
}

}  // namespace

int straightforward_forward(const attngate_problem &p, char *err, size_t err_len) {
    return forward<float>(p, p.out, err, err_len);
}

int reference_forward_f64(const attngate_problem &p, double *out, char *err, size_t err_len) {
    return forward<double>(p, out, err, err_len);
}

extern const attngate_kernel reference_kernel = {
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "reference",
    /* .version     = */ "1.1.0",
    /* .description = */ "float64 accumulation, plain loops: the oracle for goldens (paged: each sequence's pages gathered)",
    /* .features    = */ ATTNGATE_FEATURE_ALL_PAGED,
    /* .workspace   = */ ATTNGATE_WORKSPACE_LINEAR,
    /* .supports    = */ nullptr,
    /* .run         = */ reference_run,
    /* .user        = */ nullptr,
    /* .init        = */ nullptr,
    /* .free        = */ nullptr,
};

}  // namespace attngate::kernels
