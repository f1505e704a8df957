// Golden comparison metrics and verdict.
#include "checks/golden_check.hpp"

#include <cmath>

#include <fmt/ranges.h>

namespace attngate {

OutputErrors measure_errors(std::span<const float> got, std::span<const double> want) {
    ATTNGATE_CHECK(got.size() == want.size());
    OutputErrors e;
    double scale = 0.0;
    for (double w : want)
        if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    const double rel_floor = 1e-3 * scale;
    double sum_d2 = 0.0, sum_w2 = 0.0;
    int64_t counted = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double g = got[i], w = want[i];
        if (std::isnan(w)) {
            if (!std::isnan(g) && e.dropped_nan++ == 0) e.first_dropped_nan_index = static_cast<int64_t>(i);
            continue;
        }
        if (!std::isfinite(g) && std::isfinite(w)) {
            if (e.new_nonfinite++ == 0) e.first_nonfinite_index = static_cast<int64_t>(i);
            continue;
        }
        if (!std::isfinite(w)) continue;  // an infinite golden: nothing to measure
        const double d = std::fabs(g - w);
        if (e.worst_index < 0 || d > e.max_abs) {
            e.max_abs = d;
            e.worst_index = static_cast<int64_t>(i);
            e.worst_got = g;
            e.worst_want = w;
        }
        if (std::fabs(w) >= rel_floor && std::fabs(w) > 0) e.max_rel = std::max(e.max_rel, d / std::fabs(w));
        sum_d2 += d * d;
        sum_w2 += w * w;
        ++counted;
    }
    e.rms = counted ? std::sqrt(sum_d2 / static_cast<double>(counted)) : 0.0;
    e.nmse = sum_w2 > 0 ? sum_d2 / sum_w2 : (sum_d2 > 0 ? INFINITY : 0.0);
    return e;
}

ErrorMap error_map(std::span<const float> got, std::span<const double> want, std::span<const int64_t> shape,
                       int64_t max_rows, int64_t max_cols) {
    ATTNGATE_CHECK(shape.size() == 4);
    const int64_t B = shape[0], S = shape[1], H = shape[2], D = shape[3];
    const int64_t rows = std::min(S, max_rows), cols = std::min(D, max_cols);
    std::vector<double> bins(static_cast<size_t>(rows * cols), 0.0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t d = 0; d < D; ++d) {
                    const size_t i = static_cast<size_t>(((b * S + s) * H + h) * D + d);
                    double e = std::fabs(static_cast<double>(got[i]) - want[i]);
                    if (std::isnan(want[i]) && std::isnan(got[i])) e = 0.0;
                    else if (std::isnan(e) || std::isinf(e)) e = INFINITY;
                    double &bin = bins[static_cast<size_t>((s * rows / S) * cols + d * cols / D)];
                    bin = std::max(bin, e);
                }
    ErrorMap map{rows, cols, S, D, "sequence position", "value head dim", "max abs error over batch and heads; null = NaN/inf", {}};
    for (int64_t r = 0; r < rows; ++r) {
        auto &row = map.values.emplace_back();
        for (int64_t c = 0; c < cols; ++c) {
            const double v = bins[static_cast<size_t>(r * cols + c)];
            // Three significant digits are plenty for a heatmap and keep results.json small.
            row.push_back(std::isinf(v) ? std::nullopt : std::optional(std::stod(fmt::format("{:.3g}", v))));
        }
    }
    return map;
}

double golden_floor(const GoldenEntry &golden) {
    // The output is f32 for every operand dtype: a floor tied to the operands' bf16 ulp
    // would be 65536 times looser than the output can show, and for bf16 cases it was
    // 76-87% of the whole tolerance, hiding bf16 accumulation and single-row errors.
    return 2.0 * std::ldexp(1.0, -23) * golden.output_max_abs;
}

double golden_tolerance(const GoldenEntry &golden) { return 2.0 * golden.straightforward_max_abs_error + golden_floor(golden); }

double golden_rms_tolerance(const GoldenEntry &golden) {
    if (golden.straightforward_rms_error < 0) return -1.0;
    return 2.0 * golden.straightforward_rms_error + golden_floor(golden);
}

std::string index_coords(int64_t index, std::span<const int64_t> shape) {
    std::vector<int64_t> c(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        c[d] = index % shape[d];
        index /= shape[d];
    }
    return fmt::format("[{}]", fmt::join(c, ", "));
}

namespace {
/// error / tolerance; 0 / 0 is 0 (an exact case computed exactly).
double margin(double error, double tolerance) { return tolerance > 0 ? error / tolerance : (error > 0 ? INFINITY : 0.0); }
}  // namespace

double rounding_allowance(const DeclaredRounding &r, attngate_dtype dtype, double max_abs_out, std::span<const float> v) {
    if (dtype != ATTNGATE_DTYPE_BF16 || !r.any()) return 0.0;
    const double u = std::ldexp(1.0, -8);
    double max_v = 0.0;
    if (r.probabilities)
        for (float x : v)
            if (std::isfinite(x)) max_v = std::max(max_v, static_cast<double>(std::fabs(x)));
    return u * ((r.output ? max_abs_out : 0.0) + max_v);
}

CheckResult golden_check(std::span<const float> got, std::span<const double> want, const GoldenEntry &golden, double allowance) {
    const OutputErrors e = measure_errors(got, want);
    const double tol = golden_tolerance(golden) + allowance;
    const double rms_tol = golden_rms_tolerance(golden) < 0 ? -1.0 : golden_rms_tolerance(golden) + allowance;
    const double max_margin = margin(e.max_abs, tol);
    const double rms_margin = rms_tol >= 0 ? margin(e.rms, rms_tol) : NAN;
    GoldenMetrics m;
    m.max_abs_error = e.max_abs, m.max_rel_error = e.max_rel, m.rms_error = e.rms, m.nmse = e.nmse;
    m.tolerance = tol, m.margin = max_margin;
    m.rms_tolerance = rms_tol >= 0 ? rms_tol : NAN, m.rms_margin = rms_margin;
    m.straightforward_max_abs_error = golden.straightforward_max_abs_error;
    m.straightforward_rms_error = rms_tol >= 0 ? golden.straightforward_rms_error : NAN;
    m.worst_index = e.worst_index;
    m.worst_coords = e.worst_index >= 0 ? index_coords(e.worst_index, golden.shape) : "";
    m.worst_got = e.worst_got, m.worst_want = e.worst_want;
    m.new_nonfinite = e.new_nonfinite, m.dropped_nan = e.dropped_nan;
    m.error_map = error_map(got, want, golden.shape);
    if (allowance > 0) m.rounding_allowance = allowance;
    CheckResult r(std::move(m));
    if (allowance > 0) r.notes.push_back(fmt::format("both tolerances include {:.3g} for the bf16 rounding the kernel declares", allowance));
    if (rms_tol < 0) r.notes.push_back("the golden manifest has no straightforward RMS error: only the max abs error is gated (regenerate the goldens)");
    // The finite elements' error, said beside a NaN mismatch: a wrong mask both drops a NaN key and
    // moves the rows around it, and the second is the better clue.
    const std::string also = e.max_abs > tol ? fmt::format("; and max abs error {:.3g} > tolerance {:.3g} at {} (got {:.9g}, want {:.9g})",
                                                           e.max_abs, tol, index_coords(e.worst_index, golden.shape), e.worst_got, e.worst_want)
                                             : "";
    if (e.new_nonfinite > 0) {
        r.verdict = Verdict::Fail;
        r.reason = fmt::format("{} NaN/inf output(s) where the golden is finite, first at {} [b, s, h, d]{}", e.new_nonfinite,
                               index_coords(e.first_nonfinite_index, golden.shape), also);
    } else if (e.dropped_nan > 0) {
        r.verdict = Verdict::Fail;
        r.reason = fmt::format("{} finite output(s) where the golden is NaN (a NaN input did not reach them: dropped, or its key "
                               "masked from a row that attends it), first at {}{}",
                               e.dropped_nan, index_coords(e.first_dropped_nan_index, golden.shape), also);
    } else if (e.max_abs > tol) {
        r.verdict = Verdict::Fail;
        r.reason = fmt::format("max abs error {:.3g} > tolerance {:.3g} (margin {:.2f}) at {} (got {:.9g}, want {:.9g})", e.max_abs, tol,
                               max_margin, index_coords(e.worst_index, golden.shape), e.worst_got, e.worst_want);
    } else if (rms_tol >= 0 && e.rms > rms_tol) {
        r.verdict = Verdict::Fail;
        r.reason = fmt::format("RMS error {:.3g} > RMS tolerance {:.3g} (margin {:.2f}): a shift spread over many elements, "
                               "each within the max abs tolerance ({:.3g} <= {:.3g})", e.rms, rms_tol, rms_margin, e.max_abs, tol);
    } else {
        r.verdict = Verdict::Pass;
        r.reason = rms_tol >= 0 ? fmt::format("max abs error {:.3g} <= tolerance {:.3g} (margin {:.2f}); RMS error {:.3g} (margin {:.2f})",
                                              e.max_abs, tol, max_margin, e.rms, rms_margin)
                                : fmt::format("max abs error {:.3g} <= tolerance {:.3g} (margin {:.2f})", e.max_abs, tol, max_margin);
    }
    return r;
}

}  // namespace attngate
