// A float64 attention with switches for the conventions kernels get wrong (causal
// alignment, where the scale and the bias go, the soft-cap's place, GQA head mapping,
// what an empty row gets, how bf16 probabilities are rounded). With every switch at its
// default it is attngate's semantics; the conformance check compares a kernel's output
// with each variant to name the convention the kernel actually follows.
#pragma once

#include <optional>
#include <vector>

#include "plan/inputs.hpp"
#include "plan/suite.hpp"

namespace attngate {

struct ConventionVariant {
    enum class Causal { Case, TopLeft, BottomRight, None };
    enum class EmptyRow { Zeros, MeanOfV, NaN };
    enum class Probabilities { Exact, RoundedNormalized, RoundedExp };

    Causal causal = Causal::Case;               ///< which alignment causal masks and windows use
    int scale_power = 1;                        ///< 2: the scale applied twice; 0: not at all
    bool default_scale = false;                 ///< 1/sqrt(head_dim) instead of the case's scale
    bool bias_scaled = false;                   ///< scale * (q.k + bias)
    bool softcap_before_scale = false;          ///< scale * softcap(q.k)
    bool softcap_after_bias = false;            ///< softcap(scale * q.k + bias)
    bool no_softcap = false;                    ///< the case's soft-cap ignored
    bool gqa_modulo = false;                    ///< query head h reads kv head h % Hkv
    EmptyRow empty_row = EmptyRow::Zeros;       ///< a row with no allowed key
    /// Exact: no rounding (attngate's fp64 golden). RoundedNormalized: softmax(s) rounded to
    /// bf16 before P.V (XLA). RoundedExp: exp(s - max) rounded before P.V, then divided by the
    /// f32 sum (Pallas flash, the MXU form). Only on bf16 cases.
    Probabilities probabilities = Probabilities::Exact;
};

/// [B, Sq, Hq, Dv] in float64 of the case under a variant of attngate's semantics. A NaN
/// in an allowed key's score makes the row NaN, a NaN in an allowed key's V that column;
/// masked keys change nothing.
std::vector<double> variant_attention(const CaseSpec &c, const CaseInputs &in, const ConventionVariant &v = {});

}  // namespace attngate
