// Output sketches, exact and sampled diffs, and the numerics verdict.
#include "checks/numerics_check.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>

#include "io/files.hpp"

namespace attngate {

NumericsMetrics OutputSketch::metrics() const {
    NumericsMetrics m;
    m.sha256 = sha256, m.elements = elements, m.sample_bits = sample_bits;
    return m;
}

std::vector<int64_t> sketch_indices(int64_t n) {
    std::vector<int64_t> out;
    const int64_t k = std::min(n, kSketchSamples);
    for (int64_t i = 0; i < k; ++i) out.push_back(k == 1 ? 0 : i * (n - 1) / (k - 1));
    return out;
}

OutputSketch sketch_output(std::span<const float> out) {
    OutputSketch s;
    s.sha256 = sha256_hex(std::string_view(reinterpret_cast<const char *>(out.data()), out.size_bytes()));
    s.elements = static_cast<int64_t>(out.size());
    for (int64_t i : sketch_indices(s.elements)) s.sample_bits.push_back(std::bit_cast<uint32_t>(out[static_cast<size_t>(i)]));
    return s;
}

int64_t ulp_distance(float a, float b) {
    if (std::isnan(a) && std::isnan(b)) return 0;
    if (std::isnan(a) || std::isnan(b)) return INT64_MAX;
    // Map the sign-magnitude bit patterns onto a line on which neighbours differ by one.
    const auto ordered = [](float x) {
        const int32_t i = std::bit_cast<int32_t>(x);
        return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
    };
    return std::llabs(ordered(a) - ordered(b));
}

namespace {

void fold(NumericsDiff &d, float a, float b) {
    ++d.compared;
    if (std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b)) return;
    ++d.changed;
    if (std::isnan(a) != std::isnan(b)) {
        ++d.nan_changed;
        return;
    }
    if (std::isfinite(a) && std::isfinite(b)) d.max_abs = std::max(d.max_abs, std::fabs(static_cast<double>(b) - a));
    d.max_ulp = std::max(d.max_ulp, ulp_distance(a, b));
}

}  // namespace

NumericsDiff diff_outputs(std::span<const float> before, std::span<const float> after) {
    NumericsDiff d;
    if (before.size() != after.size()) {
        d.identical = false;
        d.changed = d.compared = static_cast<int64_t>(std::max(before.size(), after.size()));
        return d;
    }
    for (size_t i = 0; i < before.size(); ++i) fold(d, before[i], after[i]);
    d.identical = d.changed == 0;
    return d;
}

NumericsDiff diff_sketches(const OutputSketch &before, const OutputSketch &after) {
    NumericsDiff d;
    d.identical = before.sha256 == after.sha256 && before.elements == after.elements;
    d.exact = d.identical;
    if (before.elements != after.elements || before.sample_bits.size() != after.sample_bits.size()) {
        d.changed = d.compared = std::max(before.elements, after.elements);
        d.exact = true;
        return d;
    }
    for (size_t i = 0; i < before.sample_bits.size(); ++i)
        fold(d, std::bit_cast<float>(before.sample_bits[i]), std::bit_cast<float>(after.sample_bits[i]));
    return d;
}

namespace {
std::optional<OutputSketch> recorded_sketch(const CaseResult &r) {
    const NumericsMetrics *m = find_metrics<NumericsMetrics>(r);
    return m ? OutputSketch::of(*m) : std::nullopt;
}
}  // namespace

std::vector<CaseResult> compare_numerics(const RunResults &a, const RunResults &b) {
    std::vector<CaseResult> out;
    for (const auto &rb : b.results) {
        const CaseResult *ra = a.find(rb.case_id, rb.kernel);
        if (!ra) continue;
        const auto sa = recorded_sketch(*ra), sb = recorded_sketch(rb);
        if (!sa || !sb) continue;
        const GoldenMetrics *golden = find_metrics<GoldenMetrics>(rb);
        const double tolerance = golden ? golden->tolerance.value_or(0.0) : 0.0;
        CaseResult r;
        r.case_id = rb.case_id;
        r.kernel = rb.kernel;
        r.checks.push_back(numerics_check(diff_sketches(*sa, *sb), *sb, "A", tolerance, false));
        out.push_back(std::move(r));
    }
    return out;
}

CheckResult numerics_unreferenced(const OutputSketch &now, const std::string &why) {
    NumericsMetrics m = now.metrics();
    m.status = NumericsStatus::NoReference;
    return CheckResult(std::move(m), Verdict::Skip, why);
}

CheckResult numerics_check(const NumericsDiff &d, const OutputSketch &now, const std::string &against, double tolerance,
                           bool bitwise) {
    NumericsMetrics m = now.metrics();
    m.against = against;
    m.bit_identical = d.identical, m.exact = d.exact;
    m.compared = d.compared, m.changed = d.changed;
    m.changed_share = d.compared ? static_cast<double>(d.changed) / static_cast<double>(d.compared) : 0.0;
    m.max_abs_change = d.max_abs;
    m.max_ulp = d.max_ulp == INT64_MAX ? std::nullopt : std::optional(d.max_ulp);
    m.nan_changed = d.nan_changed;
    m.bitwise_required = bitwise;
    if (tolerance > 0) m.change_vs_tolerance = d.max_abs / tolerance;
    m.status = d.identical ? NumericsStatus::Identical : NumericsStatus::Changed;
    CheckResult r(std::move(m));
    if (d.identical) {
        r.verdict = Verdict::Pass;
        r.reason = "bit-identical to " + against;
        return r;
    }
    const std::string share = d.exact ? fmt::format("{} of {} elements ({:.1f}%)", d.changed, d.compared,
                                                    100.0 * static_cast<double>(d.changed) / std::max<int64_t>(1, d.compared))
                                      : fmt::format("{:.1f}% of {} sampled elements", 100.0 * static_cast<double>(d.changed) /
                                                                                         std::max<int64_t>(1, d.compared), d.compared);
    r.reason = fmt::format("bits changed against {}: {}, max |Δ| {:.3g}{}{}{}", against, share, d.max_abs,
                           d.max_ulp == INT64_MAX ? "" : fmt::format(" ({} ulp of float32, the output's type)", d.max_ulp),
                           tolerance > 0 ? fmt::format(", {:.2f} x the golden tolerance", d.max_abs / tolerance) : "",
                           d.nan_changed ? fmt::format(", {} NaN appeared or vanished", d.nan_changed) : "");
    if (!d.exact && d.changed == 0) r.reason += " (no sampled element moved)";
    r.verdict = bitwise ? Verdict::Fail : Verdict::Pass;
    if (bitwise) r.reason += " (the suite asks for bitwise stability)";
    return r;
}

}  // namespace attngate
