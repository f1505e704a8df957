// Numerically faulty kernels for the faulty-kernel plugin: each is the straightforward
// attention at the case's own precision (f32 scores and softmax, probabilities rounded to
// the operand dtype, P·V accumulated in f32) with one class of defect that a tolerance or
// a suite's coverage must catch. Correct everywhere else, so only that defect can fail.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention_common.hpp"
#include "numeric_faults.hpp"

namespace {

using attngate::kernels::ProblemView;

enum NumericFault : int {
    kBf16Accumulate = 1,   // P·V accumulated in bf16 (the accumulator rounded after every add)
    kOneWrongRow = 2,      // one query row (the last of batch 0, head 0) misses its last allowed key
    kOutputShift = 3,      // every output element shifted by 2^-12 (a zero-point of V read wrong)
    kSoftcapAfterBias = 4, // softcap(scale q·k + bias) instead of softcap(scale q·k) + bias
};

constexpr float kInf = std::numeric_limits<float>::infinity();

float score(const ProblemView &view, NumericFault fault, float dot, int64_t b, int64_t h, int64_t i, int64_t j) {
    const attngate_problem &p = view.problem();
    if (fault != kSoftcapAfterBias) return view.finish_score(dot, b, h, i, j);
    float s = dot * p.scale + view.bias(b, h, i, j);
    return p.softcap > 0.0f ? p.softcap * std::tanh(s / p.softcap) : s;
}

int numeric_fault_run(const attngate_kernel *self, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const auto fault = static_cast<NumericFault>(reinterpret_cast<intptr_t>(self->user));
    const ProblemView view(p);
    attngate::kernels::WidenedOperands ops(p);
    if (!ops.ok()) return attngate::kernels::fail(err, n, "workspace allocation failed");
    std::vector<float> s(static_cast<size_t>(p.seq_k)), prob(static_cast<size_t>(p.seq_k));
    std::vector<char> keep(static_cast<size_t>(p.seq_k));
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads_q; ++h)
            for (int64_t i = 0; i < p.seq_q; ++i) {
                const float *q = ops.q.data() + view.q_index(b, i, h);
                const int64_t hk = view.kv_head(h);
                float *out = p.out + view.out_index(b, i, h);
                int64_t lo, hi;
                view.key_range(i, lo, hi);
                float m = -kInf;
                bool any = false, has_nan = false;
                int64_t last = -1;
                for (int64_t j = lo; j < hi; ++j) {
                    keep[j] = view.segment_allowed(b, i, j);
                    if (!keep[j]) continue;
                    s[j] = score(view, fault, attngate::kernels::dot_f32(q, ops.k.data() + view.k_index(b, j, hk), p.head_dim), b, h, i, j);
                    last = j;
                }
                if (fault == kOneWrongRow && b == 0 && h == 0 && i == p.seq_q - 1 && last >= 0) keep[last] = 0;
                for (int64_t j = lo; j < hi; ++j) {
                    if (!keep[j]) continue;
                    any = true;
                    if (std::isnan(s[j])) has_nan = true;
                    else m = std::max(m, s[j]);
                }
                if (!any || (!has_nan && m == -kInf)) {
                    std::memset(out, 0, sizeof(float) * static_cast<size_t>(p.head_dim_v));
                    continue;
                }
                float l = 0.0f;
                for (int64_t j = lo; j < hi; ++j)
                    if (keep[j]) l += (prob[j] = std::exp(s[j] - m));
                for (int64_t j = lo; j < hi; ++j)
                    if (keep[j]) prob[j] = attngate::kernels::operand_round(prob[j] / l, p.dtype);
                for (int64_t d = 0; d < p.head_dim_v; ++d) {
                    float acc = 0.0f;
                    for (int64_t j = lo; j < hi; ++j) {
                        if (!keep[j] || s[j] == -kInf) continue;
                        acc += prob[j] * ops.v.data()[view.v_index(b, j, hk) + d];
                        if (fault == kBf16Accumulate) acc = attngate::round_to_bf16(acc);
                    }
                    out[d] = fault == kOutputShift ? acc + std::ldexp(1.0f, -12) : acc;
                }
            }
    return 0;
}

constexpr uint32_t kBf16Only = ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_F32;

#define NUMERIC_FAULT(name, what, features, fault)                                                            \
    {ATTNGATE_API_VERSION, name, "0.0.1", what, features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, numeric_fault_run, \
     reinterpret_cast<void *>(fault), nullptr, nullptr}

const attngate_kernel kNumericFaults[] = {
    NUMERIC_FAULT("bf16_accumulate", "accumulates P·V in bf16 instead of f32 (bf16 cases)", kBf16Only, kBf16Accumulate),
    NUMERIC_FAULT("one_wrong_row", "the last query row of batch 0, head 0 misses its last allowed key", ATTNGATE_FEATURE_ALL, kOneWrongRow),
    NUMERIC_FAULT("output_shift", "every output element shifted by 2^-12 (a V zero-point read wrong)", ATTNGATE_FEATURE_ALL, kOutputShift),
    NUMERIC_FAULT("softcap_after_bias", "soft-caps the biased score: softcap(scale q·k + bias)", ATTNGATE_FEATURE_ALL, kSoftcapAfterBias),
};

}  // namespace

std::span<const attngate_kernel> numeric_fault_kernels() { return kNumericFaults; }
