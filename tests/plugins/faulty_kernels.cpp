// Deliberately faulty kernels, loaded as a plugin by the tests to prove that the gate
// sees each kind of drift. Never part of the default kernel list.
#include <cmath>
#include <limits>
#include <vector>

#include "attention_common.hpp"

namespace {

using attngate::kernels::ProblemView;

enum Fault : int {
    kCausalOffByOneLastBlock = 1,  // the last 128-key block lets row i see key i+1
    kNoMaxSubtraction = 2,         // exp(s) without subtracting the row max: overflows
    kNanToZero = 3,                // NaN scores silently treated as masked
};

/// Straightforward f32 attention with one fault switched on.
int faulty_run(const attngate_kernel *self, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const Fault fault = static_cast<Fault>(reinterpret_cast<intptr_t>(self->user));
    const ProblemView view(p);
    attngate::kernels::WidenedOperands ops(p);
    if (!ops.ok()) return attngate::kernels::fail(err, n, "workspace allocation failed");
    const int64_t last_block = ((p.seq_k - 1) / 128) * 128;
    std::vector<float> s(static_cast<size_t>(p.seq_k));
    std::vector<char> keep(static_cast<size_t>(p.seq_k));
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads_q; ++h)
            for (int64_t i = 0; i < p.seq_q; ++i) {
                const float *q = ops.q.data() + view.q_index(b, i, h);
                const int64_t hk = view.kv_head(h);
                float m = -std::numeric_limits<float>::infinity();
                bool any = false;
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    bool ok = view.allowed(b, i, j);
                    if (fault == kCausalOffByOneLastBlock && p.causal && j >= last_block && j == view.aligned_position(i) + 1)
                        ok = true;
                    keep[j] = ok;
                    if (!ok) continue;
                    s[j] = view.finish_score(attngate::kernels::dot_f32(q, ops.k.data() + view.k_index(b, j, hk), p.head_dim), b, h, i, j);
                    if (fault == kNanToZero && std::isnan(s[j])) {
                        keep[j] = 0;
                        continue;
                    }
                    any = true;
                    m = std::max(m, s[j]);
                }
                if (fault == kNoMaxSubtraction) m = 0.0f;
                float *out = p.out + view.out_index(b, i, h);
                float l = 0.0f;
                for (int64_t j = 0; j < p.seq_k; ++j)
                    if (keep[j]) l += (s[j] = std::exp(s[j] - m));
                for (int64_t d = 0; d < p.head_dim_v; ++d) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < p.seq_k; ++j)
                        if (keep[j]) acc += s[j] * ops.v.data()[view.v_index(b, j, hk) + d];
                    out[d] = any ? acc / l : 0.0f;
                }
            }
    return 0;
}

constexpr uint32_t kF32Features = ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_BF16;

const attngate_kernel kFaulty[] = {
    {ATTNGATE_API_VERSION, "causal_off_by_one", "0.0.1", "causal mask off by one on the last key block",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kCausalOffByOneLastBlock)},
    {ATTNGATE_API_VERSION, "softmax_no_max", "0.0.1", "softmax without max subtraction (overflows on large logits)",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kNoMaxSubtraction)},
    {ATTNGATE_API_VERSION, "nan_to_zero", "0.0.1", "drops NaN scores as if masked",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kNanToZero)},
};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = sizeof(kFaulty) / sizeof(kFaulty[0]);
    return kFaulty;
}
