// The team's attention kernel: f32, causal or not, grouped-query heads, computed row by row
// with a numerically stable softmax. It knows attngate only through kernel_abi.h.
#include <attngate/kernel_abi.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

int run(const attngate_kernel *, const attngate_problem *p, char *err, size_t err_len) {
    if (p->dtype != ATTNGATE_DTYPE_F32) {
        std::snprintf(err, err_len, "team-causal computes f32 only");
        return 1;
    }
    const auto *q = static_cast<const float *>(p->q);
    const auto *k = static_cast<const float *>(p->k);
    const auto *v = static_cast<const float *>(p->v);
    const int64_t B = p->batch, Sq = p->seq_q, Sk = p->seq_k, Hq = p->heads_q, Hkv = p->heads_kv;
    const int64_t D = p->head_dim, Dv = p->head_dim_v, group = Hq / Hkv;
    std::vector<double> s(static_cast<size_t>(Sk));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < Sq; ++i)
            for (int64_t h = 0; h < Hq; ++h) {
                const int64_t hk = h / group;
                // Causal, aligned bottom-right: query i sees keys up to i + Sk - Sq.
                const int64_t last = p->causal ? i + Sk - Sq : Sk - 1;
                const float *qi = q + ((b * Sq + i) * Hq + h) * D;
                float *o = p->out + ((b * Sq + i) * Hq + h) * Dv;
                double m = -INFINITY;
                for (int64_t j = 0; j <= last && j < Sk; ++j) {
                    const float *kj = k + ((b * Sk + j) * Hkv + hk) * D;
                    double dot = 0;
                    for (int64_t d = 0; d < D; ++d) dot += double(qi[d]) * double(kj[d]);
                    s[j] = dot * p->scale;
                    m = std::fmax(m, s[j]);
                }
                for (int64_t d = 0; d < Dv; ++d) o[d] = 0;
                if (last < 0) continue;  // a query that sees no key: a zero row
                double sum = 0;
                for (int64_t j = 0; j <= last && j < Sk; ++j) sum += s[j] = std::exp(s[j] - m);
                for (int64_t d = 0; d < Dv; ++d) {
                    double acc = 0;
                    for (int64_t j = 0; j <= last && j < Sk; ++j) acc += s[j] * v[((b * Sk + j) * Hkv + hk) * Dv + d];
                    o[d] = static_cast<float>(acc / sum);
                }
            }
    return 0;
}

const attngate_kernel kKernels[] = {{
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name = */ "team-causal",
    /* .version = */ "1.0.0",
    /* .description = */ "the team's f32 attention: causal or not, grouped-query heads",
    /* .features = */ ATTNGATE_FEATURE_F32 | ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_GQA,
    /* .workspace_growth = */ ATTNGATE_WORKSPACE_LINEAR,
    /* .supports = */ nullptr,
    /* .run = */ run,
    /* .user = */ nullptr,
    /* .init = */ nullptr,
    /* .free = */ nullptr,
}};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = sizeof kKernels / sizeof kKernels[0];
    return kKernels;
}
