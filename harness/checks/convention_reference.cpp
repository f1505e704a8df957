// The float64 attention with convention switches (see the header).
#include "checks/convention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attngate/bf16.hpp"

namespace attngate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Index into a bias of shape `s` broadcast to [B, Hq, Sq, Sk].
size_t bias_index(const std::vector<int64_t> &s, int64_t b, int64_t h, int64_t i, int64_t j) {
    const auto pick = [&](size_t d, int64_t x) { return s[d] == 1 ? 0 : x; };
    return static_cast<size_t>(((pick(0, b) * s[1] + pick(1, h)) * s[2] + pick(2, i)) * s[3] + pick(3, j));
}

struct RowGeometry {
    int64_t lo = 0, hi = -1;  ///< inclusive keys causal masking and the window allow
};

RowGeometry geometry(const CaseSpec &c, const ConventionVariant &v, int64_t i) {
    bool top_left = c.top_left;
    if (v.causal == ConventionVariant::Causal::TopLeft) top_left = true;
    if (v.causal == ConventionVariant::Causal::BottomRight) top_left = false;
    const int64_t p = i + (top_left ? 0 : c.seq_k - c.seq_q);
    RowGeometry g{0, c.seq_k - 1};
    if (c.window_left >= 0) g.lo = std::max(g.lo, p - c.window_left);
    if (c.window_right >= 0) g.hi = std::min(g.hi, p + c.window_right);
    if (c.causal && v.causal != ConventionVariant::Causal::None) g.hi = std::min(g.hi, p);
    return g;
}

class Row {
public:
    Row(const CaseSpec &c, const CaseInputs &in, const ConventionVariant &v, int64_t b, int64_t h)
        : c_(c), in_(in), v_(v), b_(b), h_(h),
          hk_(v.gqa_modulo ? h % c.heads_kv : h / (c.heads_q / c.heads_kv)) {}

    /// Writes row i's Dv outputs to out.
    void compute(int64_t i, double *out) const {
        const RowGeometry g = geometry(c_, v_, i);
        std::vector<int64_t> keys;
        for (int64_t j = std::max<int64_t>(g.lo, 0); j <= g.hi; ++j)
            if (segment_allowed(i, j)) keys.push_back(j);
        if (keys.empty()) return empty_row(out);
        std::vector<double> s(keys.size());
        double m = -std::numeric_limits<double>::infinity();
        bool nan = false;
        for (size_t n = 0; n < keys.size(); ++n) {
            s[n] = score(i, keys[n]);
            nan = nan || std::isnan(s[n]);
            m = std::max(m, s[n]);
        }
        if (nan) return std::fill(out, out + c_.head_dim_v, kNaN);
        double l = 0;
        for (double &x : s) l += (x = std::exp(x - m));
        std::fill(out, out + c_.head_dim_v, 0.0);
        for (size_t n = 0; n < keys.size(); ++n) {
            const double w = weight(s[n], l);
            const float *vrow = &in_.v[static_cast<size_t>(((b_ * c_.seq_k + keys[n]) * c_.heads_kv + hk_) * c_.head_dim_v)];
            for (int64_t d = 0; d < c_.head_dim_v; ++d) out[d] += w * vrow[d];
        }
        if (v_.probabilities == ConventionVariant::Probabilities::RoundedExp)
            for (int64_t d = 0; d < c_.head_dim_v; ++d) out[d] /= l;
    }

private:
    bool segment_allowed(int64_t i, int64_t j) const {
        if (in_.segment_ids_q.empty()) return true;
        return in_.segment_ids_q[static_cast<size_t>(b_ * c_.seq_q + i)] == in_.segment_ids_kv[static_cast<size_t>(b_ * c_.seq_k + j)];
    }

    double score(int64_t i, int64_t j) const {
        const float *q = &in_.q[static_cast<size_t>(((b_ * c_.seq_q + i) * c_.heads_q + h_) * c_.head_dim)];
        const float *k = &in_.k[static_cast<size_t>(((b_ * c_.seq_k + j) * c_.heads_kv + hk_) * c_.head_dim)];
        double dot = 0;
        for (int64_t d = 0; d < c_.head_dim; ++d) dot += static_cast<double>(q[d]) * k[d];
        const double scale = v_.default_scale ? 1.0 / std::sqrt(static_cast<double>(c_.head_dim)) : c_.effective_scale();
        const double bias = c_.bias_shape.empty() ? 0.0 : in_.bias[bias_index(c_.bias_shape, b_, h_, i, j)];
        if (v_.bias_scaled) return std::pow(scale, v_.scale_power) * (dot + bias);
        const double cap = v_.no_softcap ? 0.0 : c_.softcap;
        if (cap > 0 && v_.softcap_before_scale) return scale * cap * std::tanh(dot / cap) + bias;
        double s = std::pow(scale, v_.scale_power) * dot;
        if (cap > 0 && v_.softcap_after_bias) return cap * std::tanh((s + bias) / cap);
        if (cap > 0) s = cap * std::tanh(s / cap);
        return s + bias;
    }

    /// The factor of V for a key whose exp(s - max) is e, given the row's sum l.
    double weight(double e, double l) const {
        switch (v_.probabilities) {
        case ConventionVariant::Probabilities::Exact: return e / l;
        case ConventionVariant::Probabilities::RoundedNormalized: return round_to_bf16(static_cast<float>(e / l));
        case ConventionVariant::Probabilities::RoundedExp: return round_to_bf16(static_cast<float>(e));
        }
        return e / l;
    }

    void empty_row(double *out) const {
        std::fill(out, out + c_.head_dim_v, 0.0);
        if (v_.empty_row == ConventionVariant::EmptyRow::NaN) std::fill(out, out + c_.head_dim_v, kNaN);
        if (v_.empty_row != ConventionVariant::EmptyRow::MeanOfV) return;
        for (int64_t j = 0; j < c_.seq_k; ++j)
            for (int64_t d = 0; d < c_.head_dim_v; ++d)
                out[d] += in_.v[static_cast<size_t>(((b_ * c_.seq_k + j) * c_.heads_kv + hk_) * c_.head_dim_v + d)] /
                          static_cast<double>(c_.seq_k);
    }

    const CaseSpec &c_;
    const CaseInputs &in_;
    const ConventionVariant &v_;
    int64_t b_, h_, hk_;
};

}  // namespace

std::vector<double> variant_attention(const CaseSpec &c, const CaseInputs &in, const ConventionVariant &v) {
    std::vector<double> out(static_cast<size_t>(c.batch * c.seq_q * c.heads_q * c.head_dim_v));
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.heads_q; ++h) {
            const Row row(c, in, v, b, h);
            for (int64_t i = 0; i < c.seq_q; ++i)
                row.compute(i, &out[static_cast<size_t>(((b * c.seq_q + i) * c.heads_q + h) * c.head_dim_v)]);
        }
    return out;
}

}  // namespace attngate
