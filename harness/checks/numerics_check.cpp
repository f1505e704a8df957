// Output sketches, exact and sampled diffs, and the numerics verdict.
#include "checks/numerics_check.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>

#include "io/files.hpp"

namespace attngate {

json::object OutputSketch::to_json() const {
    return json::object{{"sha256", sha256}, {"elements", elements}, {"sample_bits", json::array(sample_bits.begin(), sample_bits.end())}};
}

std::optional<OutputSketch> OutputSketch::from_json(const json::object &v) {
    OutputSketch s;
    const auto *sha = v.if_contains("sha256");
    const auto *n = v.if_contains("elements");
    const auto *bits = v.if_contains("sample_bits");
    if (!sha || !sha->is_string() || !n || !n->is_int64() || !bits || !bits->is_array()) return std::nullopt;
    s.sha256 = sha->get_string();
    s.elements = n->get_int64();
    for (const auto &b : bits->get_array()) {
        if (!b.is_int64() || b.get_int64() < 0 || b.get_int64() > UINT32_MAX) return std::nullopt;
        s.sample_bits.push_back(static_cast<uint32_t>(b.get_int64()));
    }
    if (s.elements < 0 || s.sample_bits.size() != sketch_indices(s.elements).size()) return std::nullopt;
    return s;
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
    for (const auto &c : r.checks)
        if (c.check == "numerics") return OutputSketch::from_json(c.metrics);
    return std::nullopt;
}
}  // namespace

std::vector<CaseResult> compare_numerics(const RunResults &a, const RunResults &b) {
    std::vector<CaseResult> out;
    for (const auto &rb : b.results) {
        const CaseResult *ra = a.find(rb.case_id, rb.kernel);
        if (!ra) continue;
        const auto sa = recorded_sketch(*ra), sb = recorded_sketch(rb);
        if (!sa || !sb) continue;
        double tolerance = 0.0;
        for (const auto &c : rb.checks)
            if (c.check == "golden")
                if (const auto *t = c.metrics.if_contains("tolerance"); t && t->is_number()) tolerance = t->to_number<double>();
        CaseResult r;
        r.case_id = rb.case_id;
        r.kernel = rb.kernel;
        r.checks.push_back(numerics_check(diff_sketches(*sa, *sb), *sb, "A", tolerance, false));
        out.push_back(std::move(r));
    }
    return out;
}

CheckResult numerics_unreferenced(const OutputSketch &now, const std::string &why) {
    CheckResult r;
    r.check = "numerics";
    r.verdict = Verdict::Skip;
    r.reason = why;
    r.metrics = now.to_json();
    r.metrics["status"] = "no_reference";
    return r;
}

CheckResult numerics_check(const NumericsDiff &d, const OutputSketch &now, const std::string &against, double tolerance,
                           bool bitwise) {
    CheckResult r;
    r.check = "numerics";
    r.metrics = now.to_json();
    r.metrics["against"] = against;
    r.metrics["bit_identical"] = d.identical;
    r.metrics["exact"] = d.exact;
    r.metrics["compared"] = d.compared;
    r.metrics["changed"] = d.changed;
    r.metrics["changed_share"] = d.compared ? static_cast<double>(d.changed) / static_cast<double>(d.compared) : 0.0;
    r.metrics["max_abs_change"] = d.max_abs;
    r.metrics["max_ulp"] = d.max_ulp == INT64_MAX ? json::value(nullptr) : json::value(d.max_ulp);
    r.metrics["nan_changed"] = d.nan_changed;
    r.metrics["bitwise_required"] = bitwise;
    if (tolerance > 0) r.metrics["change_vs_tolerance"] = d.max_abs / tolerance;
    if (d.identical) {
        r.metrics["status"] = "identical";
        r.verdict = Verdict::Pass;
        r.reason = "bit-identical to " + against;
        return r;
    }
    r.metrics["status"] = "changed";
    const std::string share = d.exact ? fmt::format("{} of {} elements ({:.1f}%)", d.changed, d.compared,
                                                    100.0 * static_cast<double>(d.changed) / std::max<int64_t>(1, d.compared))
                                      : fmt::format("{:.1f}% of {} sampled elements", 100.0 * static_cast<double>(d.changed) /
                                                                                         std::max<int64_t>(1, d.compared), d.compared);
    r.reason = fmt::format("bits changed against {}: {}, max |Δ| {:.3g}{}{}{}", against, share, d.max_abs,
                           d.max_ulp == INT64_MAX ? "" : fmt::format(" ({} ulp)", d.max_ulp),
                           tolerance > 0 ? fmt::format(", {:.2f} x the golden tolerance", d.max_abs / tolerance) : "",
                           d.nan_changed ? fmt::format(", {} NaN appeared or vanished", d.nan_changed) : "");
    if (!d.exact && d.changed == 0) r.reason += " (no sampled element moved)";
    r.verdict = bitwise ? Verdict::Fail : Verdict::Pass;
    if (bitwise) r.reason += " (the suite asks for bitwise stability)";
    return r;
}

}  // namespace attngate
