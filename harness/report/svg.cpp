// Inline SVG charts.
#include "report/svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

/// Heatmap colour levels: 0..9 light blue (tiny error) to orange (near the tolerance), linear in error / tolerance,
/// 10 red (at or above it), 11 black (NaN/inf). Cells of a level share one SVG path.
constexpr int kLevels = 12;

int heat_level(const std::optional<double> &v, double tol) {
    if (!v || !std::isfinite(*v)) return 11;
    const double e = *v;
    if (tol > 0 && e >= tol) return 10;
    const double t = tol > 0 ? std::clamp(e / tol, 0.0, 1.0) : 0.0;
    return std::min(9, static_cast<int>(t * 10.0));
}

std::string level_colour(int level) {
    if (level == 10) return "#c4001d";
    if (level == 11) return "#000000";
    const double t = level / 9.0;
    const auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(0xee, 0xfd), mix(0xf4, 0x8d), mix(0xfb, 0x3c));
}



}  // namespace

std::string svg_heatmap(const ErrorMap &m, double tol) {
    const auto &rows = m.values;
    const size_t ncols = rows.empty() ? 0 : rows[0].size();
    if (ncols == 0) return "";
    constexpr int cw = 12, ch = 7, left = 46, top = 16;
    const int w = left + static_cast<int>(ncols) * cw, h = top + static_cast<int>(rows.size()) * ch + 14;
    std::string s = fmt::format("<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, h);
    s += fmt::format("<text x=\"{}\" y=\"11\" class=\"ax\">{} (0..{}) →</text>", left, markup_escape(m.col_axis), m.head_dim_v);
    s += fmt::format("<text x=\"2\" y=\"{}\" class=\"ax\">pos 0</text><text x=\"2\" y=\"{}\" class=\"ax\">{}</text>", top + 8, h - 16,
                     m.seq_len);
    std::string paths[kLevels];
    for (size_t r = 0; r < rows.size(); ++r) {
        const auto &row = rows[r];
        for (size_t c = 0; c < row.size() && c < ncols; ++c)
            paths[heat_level(row[c], tol)] += fmt::format("M{} {}h{}v{}h-{}z", left + static_cast<int>(c) * cw, top + static_cast<int>(r) * ch, cw, ch, cw);
    }
    for (int level = 0; level < kLevels; ++level)
        if (!paths[level].empty()) s += fmt::format("<path class=\"cell l{}\" fill=\"{}\" d=\"{}\"/>", level, level_colour(level), paths[level]);
    s += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ax\">colour: error / tolerance, red ≥ 1, black NaN/inf</text></svg>", 2, h - 2);
    return s;
}

std::string svg_line_chart(const std::vector<double> &ys, const std::string &y_label, const double *reference) {
    if (ys.empty()) return "";
    constexpr double w = 260, h = 90, pad = 8;
    double lo = *std::min_element(ys.begin(), ys.end()), hi = *std::max_element(ys.begin(), ys.end());
    if (reference) lo = std::min(lo, *reference), hi = std::max(hi, *reference);
    if (hi <= lo) hi = lo + (lo == 0 ? 1.0 : std::fabs(lo) * 0.1);
    const auto X = [&](size_t i) { return ys.size() == 1 ? w / 2 : pad + (w - 2 * pad) * static_cast<double>(i) / static_cast<double>(ys.size() - 1); };
    const auto Y = [&](double y) { return h - pad - (h - 2 * pad) * (y - lo) / (hi - lo); };
    std::string pts;
    for (size_t i = 0; i < ys.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", X(i), Y(ys[i]));
    std::string s = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, h + 14);
    if (reference) s += fmt::format("<line class=\"ref\" x1=\"0\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", w, Y(*reference), Y(*reference));
    s += fmt::format("<polyline class=\"line\" points=\"{}\"/>", pts);
    for (size_t i = 0; i < ys.size(); ++i) s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\"/>", X(i), Y(ys[i]));
    s += fmt::format("<text x=\"2\" y=\"{}\" class=\"ax\">{}: {:.3g} .. {:.3g}</text></svg>", h + 12, markup_escape(y_label), lo, hi);
    return s;
}

std::string svg_trend_chart(const std::vector<double> &ys, const std::string &y_label,
                            const std::vector<std::pair<size_t, std::string>> &change_points,
                            const std::vector<size_t> &fingerprint_changes, const double *reference) {
    if (ys.empty()) return "";
    constexpr double w = 420, h = 120, pad = 10, top = 14;
    double lo = *std::min_element(ys.begin(), ys.end()), hi = *std::max_element(ys.begin(), ys.end());
    if (reference) lo = std::min(lo, *reference), hi = std::max(hi, *reference);
    if (hi <= lo) hi = lo + (lo == 0 ? 1.0 : std::fabs(lo) * 0.1);
    const auto X = [&](double i) { return ys.size() == 1 ? w / 2 : pad + (w - 2 * pad) * i / static_cast<double>(ys.size() - 1); };
    const auto Y = [&](double y) { return top + h - pad - (h - 2 * pad) * (y - lo) / (hi - lo); };
    std::string s = fmt::format("<svg class=\"chart trend-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, top + h + 14);
    for (size_t f : fingerprint_changes) {
        const double x = X(static_cast<double>(f) - 0.5);
        s += fmt::format("<line class=\"fp\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/><path class=\"fp\" d=\"M{0:.1f} {1}l4 4l-4 4l-4 -4z\"/>",
                         x, top - 2, top + h);
    }
    if (reference) s += fmt::format("<line class=\"ref\" x1=\"0\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>", w, Y(*reference), Y(*reference));
    std::string pts;
    for (size_t i = 0; i < ys.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", X(static_cast<double>(i)), Y(ys[i]));
    s += fmt::format("<polyline class=\"line\" points=\"{}\"/>", pts);
    for (size_t i = 0; i < ys.size(); ++i) s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2\"/>", X(static_cast<double>(i)), Y(ys[i]));
    for (const auto &[index, label] : change_points) {
        const double x = X(static_cast<double>(index) - 0.5);
        s += fmt::format("<line class=\"cp\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/><text class=\"cp-label\" x=\"{3:.1f}\" y=\"{4}\">{5}</text>",
                         x, top, top + h, x + 3, top + 8, markup_escape(label));
    }
    s += fmt::format("<text x=\"2\" y=\"{}\" class=\"ax\">{}: {:.3g} .. {:.3g} over {} runs</text></svg>", top + h + 12, markup_escape(y_label), lo, hi,
                     ys.size());
    return s;
}

std::string svg_distribution(const std::vector<double> &current, const std::vector<double> &baseline, const std::string &x_label) {
    if (current.empty() && baseline.empty()) return "";
    std::vector<double> all(current);
    all.insert(all.end(), baseline.begin(), baseline.end());
    double lo = *std::min_element(all.begin(), all.end()), hi = *std::max_element(all.begin(), all.end());
    if (hi <= lo) hi = lo + (lo == 0 ? 1.0 : std::fabs(lo) * 0.1);
    constexpr double w = 320, left = 64, row_h = 22;
    const auto X = [&](double v) { return left + (w - left - 8) * (v - lo) / (hi - lo); };
    std::string s = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, 2 * row_h + 16);
    const std::pair<const char *, const std::vector<double> *> rows[] = {{"this run", &current}, {"baseline", &baseline}};
    for (int r = 0; r < 2; ++r) {
        const double y = row_h * r + 12;
        s += fmt::format("<text x=\"2\" y=\"{:.0f}\" class=\"ax\">{}</text>", y + 4, rows[r].first);
        for (double v : *rows[r].second) s += fmt::format("<circle class=\"s{}\" cx=\"{:.1f}\" cy=\"{:.0f}\" r=\"3\"/>", r, X(v), y);
        if (!rows[r].second->empty())
            s += fmt::format("<line class=\"med\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\"/>", X(median(*rows[r].second)), y - 8, y + 8);
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ax\">{}: {:.3g} .. {:.3g}</text></svg>", left, 2 * row_h + 12, markup_escape(x_label), lo, hi);
    return s;
}

std::string svg_ratio_interval(double ratio, double ci_low, double ci_high, double threshold) {
    if (!std::isfinite(ratio) || !std::isfinite(ci_low) || !std::isfinite(ci_high) || !std::isfinite(threshold)) return "";
    const double lo = std::min({ratio, ci_low, 1.0}) - 0.02, hi = std::max({ratio, ci_high, threshold}) + 0.02;
    constexpr double w = 320, left = 8, y = 18;
    const auto X = [&](double v) { return left + (w - 2 * left) * (v - lo) / (hi - lo); };
    std::string s = fmt::format("<svg class=\"chart ratio\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"46\" role=\"img\">", w);
    s += fmt::format("<line class=\"base\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"4\" y2=\"32\"/>", X(1.0));
    s += fmt::format("<line class=\"ref\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"4\" y2=\"32\"/>", X(threshold));
    s += fmt::format("<line class=\"ci\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"/>", X(ci_low), X(ci_high), y, y);
    s += fmt::format("<circle class=\"ratio\" cx=\"{:.1f}\" cy=\"{}\" r=\"4\"/>", X(ratio), y);
    return s + fmt::format("<text x=\"2\" y=\"44\" class=\"ax\">time ratio {:.3g}, CI [{:.3g}, {:.3g}]; grey 1 = baseline, red dashed {:.3g} = threshold</text></svg>",
                           ratio, ci_low, ci_high, threshold);
}

std::string svg_bars(const std::vector<std::pair<std::string, double>> &bars, const std::string &unit) {
    double hi = 0;
    for (const auto &b : bars) hi = std::max(hi, b.second);
    if (bars.empty() || hi <= 0) return "";
    constexpr double w = 320, left = 72, bar_h = 16;
    std::string s = fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">", w, bars.size() * (bar_h + 6));
    for (size_t i = 0; i < bars.size(); ++i) {
        const double y = static_cast<double>(i) * (bar_h + 6);
        s += fmt::format("<text x=\"2\" y=\"{:.0f}\" class=\"ax\">{}</text><rect class=\"bar b{}\" x=\"{}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\"/>"
                         "<text x=\"{:.1f}\" y=\"{:.0f}\" class=\"ax\">{:.4g} {}</text>",
                         y + 12, markup_escape(bars[i].first), i, left, y, (w - left - 90) * bars[i].second / hi, bar_h,
                         left + (w - left - 90) * bars[i].second / hi + 4, y + 12, bars[i].second, markup_escape(unit));
    }
    return s + "</svg>";
}

}  // namespace attngate
