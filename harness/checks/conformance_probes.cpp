// The conformance check's probe cases: shapes every kernel family here can run (Sq, Sk
// multiples of 128, head_dim <= 64), inputs chosen so that the candidate conventions give
// outputs far apart (the unit tests require 10x the match tolerance), and which candidate
// is attngate's and which the kernel's declarations admit.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attngate/bf16.hpp"
#include "checks/conformance.hpp"
#include "checks/convention_reference.hpp"
#include "io/rng.hpp"

namespace attngate {

namespace {

using V = ConventionVariant;
constexpr uint64_t kSeed = 20261203;
constexpr int64_t kNanKey = 100;

CaseSpec spec(std::string id, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d) {
    CaseSpec c;
    c.id = std::move(id);
    c.seq_q = sq, c.seq_k = sk, c.heads_q = hq, c.heads_kv = hkv, c.head_dim = d, c.head_dim_v = d;
    return c;
}

std::vector<float> uniform(const CaseSpec &c, std::string_view stream, size_t n, double amplitude) {
    const CounterRng rng(kSeed, fmt::format("{}/{}", c.id, stream));
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(amplitude * rng.uniform(i));
    return x;
}

std::vector<uint16_t> bf16_bits(const std::vector<float> &x) {
    std::vector<uint16_t> b(x.size());
    for (size_t i = 0; i < x.size(); ++i) b[i] = float_to_bf16(x[i]);
    return b;
}

/// Uniform q and k on [-a, a), v on [-1, 1), a bias on [-bias_amp, bias_amp) when the case has one.
CaseInputs random_inputs(const CaseSpec &c, double qk_amp, double bias_amp = 0) {
    CaseInputs in;
    in.dtype = c.dtype;
    in.q = uniform(c, "q", static_cast<size_t>(c.batch * c.seq_q * c.heads_q * c.head_dim), qk_amp);
    in.k = uniform(c, "k", static_cast<size_t>(c.batch * c.seq_k * c.heads_kv * c.head_dim), qk_amp);
    in.v = uniform(c, "v", static_cast<size_t>(c.batch * c.seq_k * c.heads_kv * c.head_dim_v), 1.0);
    if (!c.bias_shape.empty()) in.bias = uniform(c, "bias", static_cast<size_t>(c.batch * c.heads_q * c.seq_q * c.seq_k), bias_amp);
    return in;
}

struct ProbeBuilder {
    ProbeCase pc;
    ProbeBuilder(std::string probe, CaseSpec s, CaseInputs in) {
        pc.probe = std::move(probe);
        pc.id = s.id;
        pc.spec = std::move(s);
        pc.inputs = std::move(in);
    }
    ProbeBuilder &add(std::string name, std::string description, const V &v) {
        pc.candidates.push_back({std::move(name), std::move(description), variant_attention(pc.spec, pc.inputs, v)});
        return *this;
    }
    /// attngate's candidate is the first; the declaration admits `declared` (default: attngate's).
    ProbeCase done(std::vector<std::string> declared = {}) {
        if (pc.attngate.empty()) pc.attngate = {pc.candidates.front().name};
        pc.declared = declared.empty() ? pc.attngate : std::move(declared);
        return std::move(pc);
    }
};

void causal_alignment(const DeclaredConventions &d, std::vector<ProbeCase> &out) {
    for (const bool top_left : {false, true}) {
        CaseSpec c = spec(top_left ? "top_left_q128_k256" : "bottom_right_q128_k256", 128, 256, 1, 1, 32);
        c.causal = true, c.top_left = top_left;
        ProbeBuilder b("causal_alignment", c, random_inputs(c, 2.0));
        const std::string own = top_left ? "top_left" : "bottom_right", other = top_left ? "bottom_right" : "top_left";
        const auto variant = [](bool tl) { return V{.causal = tl ? V::Causal::TopLeft : V::Causal::BottomRight}; };
        b.add(own, own == "top_left" ? "causal masks aligned top-left (query row i at key i)"
                                     : "causal masks aligned bottom-right (query row i at key i + Sk - Sq)", variant(top_left));
        b.add(other, other == "top_left" ? "causal masks aligned top-left (query row i at key i)"
                                         : "causal masks aligned bottom-right (query row i at key i + Sk - Sq)", variant(!top_left));
        b.add("no_mask", "no causal mask at all", V{.causal = V::Causal::None});
        out.push_back(b.done({d.causal_alignment == "case" ? own : d.causal_alignment}));
    }
}

void scale(uint32_t features, std::vector<ProbeCase> &out) {
    CaseSpec c = spec("scale_0.3_d64", 128, 128, 1, 1, 64);
    c.scale = 0.3;
    const V twice{.scale_power = 2};
    out.push_back(ProbeBuilder("scale", c, random_inputs(c, 1.5))
                      .add("scale_once", "softmax(scale * q.k): the case's scale once", V{})
                      .add("scale_twice", "the scale applied twice (scale^2 * q.k)", twice)
                      .add("unscaled", "no scale (q.k)", V{.scale_power = 0})
                      .add("default_scale", "1/sqrt(head_dim) instead of the case's scale", V{.default_scale = true})
                      .done());
    if (features & ATTNGATE_FEATURE_BIAS) {
        CaseSpec cb = c;
        cb.id = "scale_then_bias";
        cb.bias_shape = {1, 1, 128, 128};
        out.push_back(ProbeBuilder("scale", cb, random_inputs(cb, 1.5, 3.0))
                          .add("bias_after_scale", "scale * q.k + bias (the bias is not scaled)", V{})
                          .add("bias_scaled", "scale * (q.k + bias) (the bias scaled too)", V{.bias_scaled = true})
                          .add("scale_twice", "the scale applied twice", twice)
                          .done());
    }
    if (features & ATTNGATE_FEATURE_SOFTCAP) {
        CaseSpec cs = c;
        cs.id = "scale_then_softcap";
        cs.softcap = 2.0;
        out.push_back(ProbeBuilder("scale", cs, random_inputs(cs, 2.0))
                          .add("softcap_of_scaled", "softcap(scale * q.k)", V{})
                          .add("softcap_before_scale", "scale * softcap(q.k)", V{.softcap_before_scale = true})
                          .add("no_softcap", "the soft-cap ignored", V{.no_softcap = true})
                          .add("scale_twice", "the scale applied twice", twice)
                          .done());
    }
}

void bias_softcap(std::vector<ProbeCase> &out) {
    CaseSpec c = spec("softcap_2_bias", 128, 128, 1, 1, 64);
    c.softcap = 2.0;
    c.bias_shape = {1, 1, 128, 128};
    out.push_back(ProbeBuilder("bias_softcap", c, random_inputs(c, 2.0, 3.0))
                      .add("softcap_then_bias", "softcap(scale * q.k) + bias", V{})
                      .add("bias_then_softcap", "softcap(scale * q.k + bias): the soft-cap after the bias", V{.softcap_after_bias = true})
                      .done());
}

void gqa(std::vector<ProbeCase> &out) {
    const CaseSpec c = spec("gqa_4q_2kv", 128, 128, 4, 2, 32);
    out.push_back(ProbeBuilder("gqa", c, random_inputs(c, 2.0))
                      .add("grouped", "query head h reads kv head h / (Hq / Hkv)", V{})
                      .add("modulo", "query head h reads kv head h % Hkv", V{.gqa_modulo = true})
                      .done());
}

void fully_masked_row(uint32_t features, const DeclaredConventions &d, std::vector<ProbeCase> &out) {
    CaseSpec c = spec("empty_rows_segment_ids", 128, 128, 1, 1, 32);
    CaseInputs in;
    if (features & ATTNGATE_FEATURE_SEGMENT_IDS) {
        c.segments = 3;
        in = random_inputs(c, 2.0);
        for (int64_t i = 0; i < 128; ++i) {  // query rows 64.. have id 2, which no key has
            in.segment_ids_q.push_back(i < 64 ? 0 : 2);
            in.segment_ids_kv.push_back(i < 64 ? 0 : 1);
        }
    } else {  // bottom-right causal with Sq > Sk: the first Sq - Sk rows see no key
        c = spec("empty_rows_causal_q256_k128", 256, 128, 1, 1, 32);
        c.causal = true;
        in = random_inputs(c, 2.0);
    }
    out.push_back(ProbeBuilder("fully_masked_row", c, std::move(in))
                      .add("zeros", "zeros in a row with no allowed key", V{})
                      .add("mean_of_v", "the mean of V over all keys in a row with no allowed key", V{.empty_row = V::EmptyRow::MeanOfV})
                      .add("nan", "NaN in a row with no allowed key", V{.empty_row = V::EmptyRow::NaN})
                      .done({d.fully_masked_row}));
}

void masked_nan(const DeclaredConventions &d, std::vector<ProbeCase> &out) {
    for (const char *tensor : {"v", "k"}) {
        CaseSpec c = spec(fmt::format("nan_in_{}_at_key_{}_causal", tensor, kNanKey), 128, 128, 1, 1, 32);
        c.causal = true;
        CaseInputs in = random_inputs(c, 2.0);
        const bool v = tensor[0] == 'v';
        (v ? in.v : in.k)[static_cast<size_t>(kNanKey * c.head_dim + (v ? 3 : 5))] = NAN;
        ProbeBuilder b("masked_nan", c, std::move(in));
        b.add("ignored", fmt::format("a NaN in {} at a masked key changes nothing", tensor), V{});
        b.pc.candidates.push_back({"leaks", fmt::format("a NaN in {} at a masked key reaches the rows that mask it", tensor), {}});
        b.pc.nan_pattern = true;
        b.pc.masked_key = kNanKey;
        out.push_back(b.done({(v ? d.v_nan_leaks : d.k_nan_leaks) ? "leaks" : "ignored"}));
    }
}


/// The bf16 probe's logit of key 0 per head: chosen so that the three roundings of the
/// probabilities move the output by the most, with every rounded value far from a tie.
std::vector<float> bf16_anchor_logits(int64_t keys, int count) {
    const double n = static_cast<double>(keys - 1);
    const auto margin = [](double x) {  // distance to the nearest bf16 rounding midpoint, relative
        const float r = round_to_bf16(static_cast<float>(x));
        const double ulp = std::ldexp(1.0, std::ilogb(r) - 7);
        return std::abs(std::abs(x - r) - ulp / 2) / std::abs(x);
    };
    std::vector<std::pair<double, float>> scored;
    for (int t = 0; t < 96; ++t) {
        const float logit = round_to_bf16(0.25f + 0.04f * static_cast<float>(t));
        const double e = std::exp(-static_cast<double>(logit)), l = 1 + n * e;
        // With key 0's value -n e (exactly cancelling), relative to the terms t = n e / l:
        const double t_terms = n * e / l;
        const double normalized = n * round_to_bf16(static_cast<float>(e / l)) - n * e * round_to_bf16(static_cast<float>(1 / l));
        const double by_exp = n * (round_to_bf16(static_cast<float>(e)) - e) / l;
        const double sep = std::min({std::abs(normalized), std::abs(by_exp), std::abs(normalized - by_exp)}) / t_terms;
        const double safe = std::min({margin(e), margin(e / l), margin(1 / l)});
        if (safe > 1e-4) scored.emplace_back(sep, logit);
    }
    std::sort(scored.rbegin(), scored.rend());
    std::vector<float> out;
    for (const auto &[sep, logit] : scored)
        if (static_cast<int>(out.size()) < count && std::find(out.begin(), out.end(), logit) == out.end()) out.push_back(logit);
    return out;
}

/// bf16, Sq = Sk = 128, four heads, head_dim 64 (scale 1/8, exact). Key 0 has logit L_h,
/// every other key logit 0 and value w_d; key 0's value -bf16(N e^-L w_d) cancels their sum,
/// so the output is tiny while how the probabilities are rounded moves it by ~2^-9 of the
/// cancelled terms: each candidate is hundreds of output ulps from the others.
void bf16_probabilities(const DeclaredConventions &d, std::vector<ProbeCase> &out) {
    CaseSpec c = spec("bf16_cancelling_values", 128, 128, 4, 4, 64);
    c.dtype = ATTNGATE_DTYPE_BF16;
    const std::vector<float> logits = bf16_anchor_logits(c.seq_k, 4);
    const int64_t sk = c.seq_k, h = c.heads_q, dim = c.head_dim;
    const double n = static_cast<double>(sk - 1);
    CaseInputs in;
    in.dtype = c.dtype;
    in.q.assign(static_cast<size_t>(c.seq_q * h * dim), 0.0f);
    in.k.assign(static_cast<size_t>(sk * h * dim), 0.0f);
    in.v.assign(static_cast<size_t>(sk * h * dim), 0.0f);
    std::vector<double> scale(static_cast<size_t>(c.seq_q * h * dim));
    for (int64_t hh = 0; hh < h; ++hh) {
        const float a = logits[static_cast<size_t>(hh)] * 8.0f;  // q.k * 1/8 = L
        const double e = std::exp(-static_cast<double>(logits[static_cast<size_t>(hh)]));
        for (int64_t i = 0; i < c.seq_q; ++i) in.q[static_cast<size_t>((i * h + hh) * dim)] = a;
        in.k[static_cast<size_t>(hh * dim)] = 1.0f;
        for (int64_t dd = 0; dd < dim; ++dd) {
            const float w = 1.0f + static_cast<float>(dd) / 64.0f;
            in.v[static_cast<size_t>(hh * dim + dd)] = -round_to_bf16(static_cast<float>(n * e * w));
            for (int64_t j = 1; j < sk; ++j) in.v[static_cast<size_t>((j * h + hh) * dim + dd)] = w;
            for (int64_t i = 0; i < c.seq_q; ++i) scale[static_cast<size_t>((i * h + hh) * dim + dd)] = n * e * w / (1 + n * e);
        }
    }
    in.q_bf16 = bf16_bits(in.q), in.k_bf16 = bf16_bits(in.k), in.v_bf16 = bf16_bits(in.v);
    ProbeBuilder b("bf16_probabilities", c, std::move(in));
    b.add("exact", "probabilities kept exact (f32) before P.V", V{});
    b.add("rounded_normalized", "softmax probabilities rounded to bf16 before P.V (XLA's form)",
          V{.probabilities = V::Probabilities::RoundedNormalized});
    b.add("rounded_exp", "exp(s - max) rounded to bf16 before P.V, then divided by the f32 sum (flash's form)",
          V{.probabilities = V::Probabilities::RoundedExp});
    b.pc.scale = std::move(scale);
    b.pc.tolerance = std::ldexp(1.0, -14);
    // The C ABI says bf16 probabilities are rounded before P.V, and the fp64 goldens accept
    // exact ones: a kernel that declares nothing may do either.
    b.pc.attngate = {"rounded_normalized", "rounded_exp"};
    if (!d.declares) out.push_back(b.done({"exact", "rounded_normalized", "rounded_exp"}));
    else if (d.rounds_probabilities) out.push_back(b.done({"rounded_normalized", "rounded_exp"}));
    else out.push_back(b.done({"exact"}));
}

}  // namespace

std::vector<ProbeCase> probe_cases(uint32_t features, const DeclaredConventions &declared, std::vector<SkippedProbe> *skipped) {
    std::vector<ProbeCase> out;
    const auto skip = [&](const char *probe, const char *why) {
        if (skipped) skipped->push_back({probe, why});
    };
    const bool f32 = features & ATTNGATE_FEATURE_F32;
    if (!f32) skip("f32 probes", "the kernel does not declare f32");
    if (f32 && (features & ATTNGATE_FEATURE_CAUSAL)) causal_alignment(declared, out);
    else skip("causal_alignment", "needs the causal feature");
    if (f32) scale(features, out);
    if (f32 && (features & ATTNGATE_FEATURE_BIAS) && (features & ATTNGATE_FEATURE_SOFTCAP)) bias_softcap(out);
    else skip("bias_softcap", "needs the bias and softcap features");
    if (f32 && (features & ATTNGATE_FEATURE_GQA)) gqa(out);
    else skip("gqa", "needs the gqa feature");
    const bool by_segments = features & ATTNGATE_FEATURE_SEGMENT_IDS;
    const bool by_causal = (features & ATTNGATE_FEATURE_CAUSAL) && declared.causal_alignment != "top_left";
    if (f32 && (by_segments || by_causal)) fully_masked_row(features, declared, out);
    else skip("fully_masked_row", "needs segment ids, or causal masks that honour bottom-right");
    if (f32 && (features & ATTNGATE_FEATURE_CAUSAL)) masked_nan(declared, out);
    else skip("masked_nan", "needs the causal feature");
    if (features & ATTNGATE_FEATURE_BF16) bf16_probabilities(declared, out);
    else skip("bf16_probabilities", "needs the bf16 feature");
    return out;
}

}  // namespace attngate
