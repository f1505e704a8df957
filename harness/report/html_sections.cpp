// HTML reporter: the data the per case x kernel sections are drawn from. The report's script
// makes each section and, when it opens, draws what it shows (metrics tables, the error
// heatmap, memory, timing, cost and trend charts) from one JSON block that holds every row's
// numbers once, so that a report of thousands of rows stays a few MB.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/html.hpp"

namespace attngate {

namespace {

/// Heatmap colour levels: 0..9 light blue (tiny error) to orange (near the tolerance), linear
/// in error / tolerance, 10 red (at or above it), 11 black (NaN/inf); one character each
/// ('.' for a bin a short row lacks: not drawn).
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

double number_or(const std::optional<double> &v, double def) { return v && !std::isnan(*v) ? *v : def; }

/// A value a chart is drawn from, to 8 significant digits (a chart's pixel, not the tables'
/// numbers, which are formatted once here); null when it is not finite.
json::value plotted(double x) {
    if (!std::isfinite(x)) return nullptr;
    const double rounded = std::stod(fmt::format("{:.8g}", x));
    if (rounded == std::trunc(rounded) && std::fabs(rounded) < 1e15) return static_cast<int64_t>(rounded);  // "7432800", not "7.4328E6"
    return rounded;
}

template <class T>
json::array plotted(const std::vector<T> &v) {
    json::array a;
    for (const T &x : v) a.push_back(plotted(static_cast<double>(x)));
    return a;
}

/// A series that mostly repeats itself (memory after each call) as [value, count] runs.
template <class T>
json::array runs(const std::vector<T> &v) {
    json::array out;
    for (size_t i = 0, j = 0; i < v.size(); i = j) {
        while (j < v.size() && v[j] == v[i]) ++j;
        out.push_back({plotted(static_cast<double>(v[i])), j - i});
    }
    return out;
}

/// The scalar metrics' names per check, in the order the checks list them, so that each row
/// holds only its values. A name new to the list goes after the row's previous one.
class MetricNames {
public:
    void add(const std::string &check, const json::object &metrics) {
        json::value &slot = names_[check];
        if (!slot.is_array()) slot.emplace_array();
        json::array &names = slot.get_array();
        size_t at = 0;
        for (const auto &[name, v] : metrics) {
            if (v.is_array() || v.is_object()) continue;
            const auto it = std::find(names.begin(), names.end(), json::value(name));
            at = it != names.end() ? static_cast<size_t>(it - names.begin()) + 1
                                   : static_cast<size_t>(names.insert(names.begin() + static_cast<std::ptrdiff_t>(at), json::string(name)) - names.begin()) + 1;
        }
    }
    /// The row's values aligned with its check's names: as the tables show them, null where absent.
    json::array values(const std::string &check, const json::object &metrics) const {
        json::array out;
        for (const auto &name : names_.at(check).get_array()) {
            const json::value *v = metrics.if_contains(name.get_string());
            out.push_back(v ? json::value(format_number(v)) : json::value(nullptr));
        }
        return out;
    }
    const json::object &all() const { return names_; }

private:
    json::object names_;
};

/// What a check's figures are drawn from.
json::object figures(const CheckResult &k) {
    json::object f;
    if (const GoldenMetrics *g = k.get<GoldenMetrics>(); g && g->error_map && !g->error_map->values.empty()) {
        const ErrorMap &m = *g->error_map;
        const size_t cols = m.values[0].size();
        std::string levels;
        for (const auto &row : m.values)
            for (size_t c = 0; c < cols; ++c) levels += c < row.size() ? "0123456789ab"[heat_level(row[c], number_or(g->tolerance, 0.0))] : '.';
        f["heatmap"] = {{"levels", levels}, {"cols", cols}, {"seq_len", m.seq_len}, {"head_dim_v", m.head_dim_v}, {"col_axis", m.col_axis}};
    } else if (const MemoryMetrics *m = k.get<MemoryMetrics>()) {
        if (m->heap_live_bytes) f["live"] = runs(*m->heap_live_bytes);
        if (m->rss_bytes) f["rss"] = runs(*m->rss_bytes);
        json::array bars;
        if (m->abi_peak_bytes) bars.push_back({"peak", *m->abi_peak_bytes});
        if (m->peak_baseline_bytes) bars.push_back({"baseline", *m->peak_baseline_bytes});
        if (!bars.empty()) f["bars"] = std::move(bars);
        if (k.crash) f["crash"] = json::serialize(to_json_object(*k.crash));
    } else if (const PerfMetrics *p = k.get<PerfMetrics>()) {
        f["samples"] = plotted(p->samples_s.value_or(std::vector<double>{}));
        f["baseline"] = plotted(p->baseline_samples_s.value_or(std::vector<double>{}));
        const double threshold = 1.0 + number_or(p->threshold_pct, NAN) / 100.0;  // a percent becomes a ratio here, once
        const double ratio[] = {number_or(p->ratio, NAN), number_or(p->ci_low, NAN), number_or(p->ci_high, NAN), threshold};
        if (std::all_of(std::begin(ratio), std::end(ratio), [](double x) { return std::isfinite(x); }))
            f["ratio"] = {plotted(ratio[0]), plotted(ratio[1]), plotted(ratio[2]), plotted(ratio[3])};
        f["ci_percent"] = fmt::format("{:.3g}", 100 * number_or(p->ci_level, 0.95));
    }
    return f;
}

/// One series' chart over the history: its values, change points, fingerprint changes.
json::object trend(const TrendReport &t, const SeriesTrend &series, const std::string &title, std::optional<double> reference) {
    json::array cps, fps, notes;
    for (const auto &c : series.changes) {
        cps.push_back({c.point.index, fmt::format("{:+.1f}%", 100.0 * c.point.relative_change())});
        notes.push_back(json::string(describe_change(t, series, c)));
    }
    for (const auto &f : t.shifts)
        for (size_t i = 1; i < series.runs.size(); ++i)
            if (series.runs[i] == f.run) fps.push_back(i);
    json::object o{{"title", title}, {"metric", enum_name(series.metric)}, {"values", plotted(series.values)}, {"changes", std::move(cps)},
                   {"fingerprint", std::move(fps)}, {"notes", std::move(notes)}};
    if (reference) o["reference"] = plotted(*reference);
    return o;
}

json::array trends(const CaseResult &c, const TrendReport &t) {
    json::array out;
    if (t.run_ids.size() < 2) return out;
    std::optional<double> tol;
    if (const GoldenMetrics *g = find_metrics<GoldenMetrics>(c); g && number_or(g->tolerance, 0.0) > 0) tol = g->tolerance;
    if (const auto *err = t.find(c.case_id, c.kernel, HistoryFigure::MaxAbsError)) out.push_back(trend(t, *err, "max abs error (dashed: tolerance)", tol));
    if (const auto *med = t.find(c.case_id, c.kernel, HistoryFigure::MedianS)) out.push_back(trend(t, *med, "median time per call", std::nullopt));
    if (const auto *peak = t.find(c.case_id, c.kernel, HistoryFigure::PeakBytes); peak && !peak->changes.empty())
        out.push_back(trend(t, *peak, "peak bytes", std::nullopt));
    return out;
}

std::string params_line(const CaseResult &c) {
    std::string params;
    for (const auto &[k, val] : c.params)
        if (k != "paged") params += fmt::format("{}={} ", std::string_view(k), format_number(&val));
    if (const std::string paged = paged_said(c.params); !paged.empty()) params += "· " + paged + " ";
    return params;
}

/// The same string once: rows refer to it by its index.
size_t intern(json::array &strings, const std::string &s) {
    const auto it = std::find(strings.begin(), strings.end(), json::value(s));
    if (it != strings.end()) return static_cast<size_t>(it - strings.begin());
    strings.push_back(json::string(s));
    return strings.size() - 1;
}

}  // namespace

std::string html_row_data(const RunResults &r, const ReportContext &ctx) {
    MetricNames names;
    json::array checks, strings, rows, metric_names, key_names, colours;
    for (const auto &c : r.results)
        for (const auto &k : c.checks) {
            names.add(k.name(), metrics_json(k));
            if (intern(checks, k.name()) == key_names.size()) key_names.push_back(json::value_from(key_number_names(k.check())));
        }
    for (const auto &c : r.results) {
        json::array row{intern(strings, c.case_id), intern(strings, c.kernel), verdict_name(c.verdict()), intern(strings, params_line(c)),
                        intern(strings, c.kernel_version), fmt::format("{:.3g}", c.seconds), json::array{}, trends(c, ctx.trends)};
        for (const auto &k : c.checks) {
            const json::object metrics = metrics_json(k);
            json::array check{intern(checks, k.name()), verdict_name(k.verdict), intern(strings, k.reason), names.values(k.name(), metrics),
                              figures(k), json::value_from(k.notes)};
            while (check.size() > 4 && check.back().is_structured() && (check.back().is_array() ? check.back().get_array().empty() : check.back().get_object().empty()))
                check.pop_back();  // no figures or notes: nothing written
            row[6].get_array().push_back(std::move(check));
        }
        rows.push_back(std::move(row));
    }
    for (const auto &check : checks) metric_names.push_back(names.all().at(check.get_string()));
    for (int level = 0; level < kLevels; ++level) colours.push_back(json::string(level_colour(level)));
    json::object rank;
    for (Verdict v : {Verdict::Error, Verdict::Fail, Verdict::Pass, Verdict::Skip}) rank[verdict_name(v)] = verdict_rank(v);
    const json::object data{{"rank", std::move(rank)}, {"heat_colours", std::move(colours)}, {"checks", std::move(checks)},
                            {"metric_names", std::move(metric_names)}, {"key_names", std::move(key_names)}, {"trend_runs", ctx.trends.run_ids.size()},
                            {"strings", std::move(strings)}, {"rows", std::move(rows)}};
    // In a <script> block only "</script" and "<!--" could end it early: no '<' at all, then.
    std::string text;
    for (const char ch : json::serialize(data)) ch == '<' ? text += "\\u003c" : text += ch;
    return "<script type=\"application/json\" id=\"row-data\">" + text + "</script>\n";
}

}  // namespace attngate
