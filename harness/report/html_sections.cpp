// HTML reporter: one case x kernel's section — numerics with the error heatmap, memory,
// throughput, cost, any other check's metrics, and trend charts over the history.
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/html.hpp"
#include "report/svg.hpp"

namespace attngate {

namespace {

template <class T>
std::vector<double> series(const std::optional<std::vector<T>> &v) {
    return v ? std::vector<double>(v->begin(), v->end()) : std::vector<double>{};
}

double number_or(const std::optional<double> &v, double def) { return v && !std::isnan(*v) ? *v : def; }

/// Every scalar metric as a two-column table (arrays and objects are drawn, not listed).
std::string metrics_table(const CheckResult &k) {
    std::string s = "<table class=\"metrics\">";
    for (const auto &[name, v] : metrics_json(k))
        if (!v.is_array() && !v.is_object())
            s += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td></tr>", markup_escape(name), markup_escape(format_number(&v)));
    return s + "</table>";
}

std::string golden_figures(const CheckResult &k) {
    const GoldenMetrics &g = k.as<GoldenMetrics>();
    if (!g.error_map) return "<p class=\"note\">no error map recorded</p>";
    return "<div><div class=\"note\">max abs error over sequence position × value head dim</div>" +
           svg_heatmap(*g.error_map, number_or(g.tolerance, 0.0)) + "</div>";
}

std::string memory_figures(const CheckResult &k) {
    const MemoryMetrics &m = k.as<MemoryMetrics>();
    std::string s;
    if (const auto live = series(m.heap_live_bytes); !live.empty())
        s += "<div><div class=\"note\">live heap bytes after each call</div>" + svg_line_chart(live, "bytes") + "</div>";
    if (const auto rss = series(m.rss_bytes); !rss.empty())
        s += "<div><div class=\"note\">RSS after each call</div>" + svg_line_chart(rss, "bytes") + "</div>";
    std::vector<std::pair<std::string, double>> bars;
    if (m.abi_peak_bytes) bars.emplace_back("peak", static_cast<double>(*m.abi_peak_bytes));
    if (m.peak_baseline_bytes) bars.emplace_back("baseline", static_cast<double>(*m.peak_baseline_bytes));
    if (!bars.empty()) s += "<div><div class=\"note\">peak against baseline</div>" + svg_bars(bars, "bytes") + "</div>";
    if (k.crash) s += fmt::format("<pre class=\"mono\">crash: {}</pre>", markup_escape(json::serialize(to_json_object(*k.crash))));
    return s;
}

std::string perf_figures(const CheckResult &k) {
    const PerfMetrics &m = k.as<PerfMetrics>();
    std::string s = "<div><div class=\"note\">time per repetition, this run against the baseline</div>" +
                    svg_distribution(series(m.samples_s), series(m.baseline_samples_s), "seconds") + "</div>";
    if (m.ratio && !std::isnan(*m.ratio))
        s += fmt::format("<p>time ratio (this run / baseline) <b>{}</b>, {:.3g}% CI [{}, {}], p = {} (adjusted {}), status {}</p>", format_field(m.ratio),
                         100 * number_or(m.ci_level, 0.95), format_field(m.ci_low), format_field(m.ci_high), format_field(m.p_value), format_field(m.p_adjusted),
                         markup_escape(format_field(m.status)));
    const double threshold = 1.0 + number_or(m.threshold_pct, NAN) / 100.0;  // a percent becomes a ratio here, once
    if (const std::string ci = svg_ratio_interval(number_or(m.ratio, NAN), number_or(m.ci_low, NAN), number_or(m.ci_high, NAN), threshold);
        !ci.empty())
        s += "<div><div class=\"note\">time ratio with its confidence interval against the threshold</div>" + ci + "</div>";
    return s;
}

std::string cost_figures(const CheckResult &k) {
    const CostMetrics &m = k.as<CostMetrics>();
    return fmt::format("<p>{} {} per million tokens (baseline {}) on {} at {} per hour — price source: {} ({})</p>",
                       format_field(m.usd_per_million_tokens), markup_escape(format_field(m.currency)), format_field(m.baseline_usd_per_million_tokens),
                       markup_escape(format_field(m.device_class)), format_field(m.price_per_hour), markup_escape(format_field(m.price_source)),
                       markup_escape(format_field(m.price_date)));
}

std::string check_block(const CheckResult &k) {
    std::string figs;
    if (k.get<GoldenMetrics>()) figs = golden_figures(k);
    else if (k.get<MemoryMetrics>()) figs = memory_figures(k);
    else if (k.get<PerfMetrics>()) figs = perf_figures(k);
    else if (k.get<CostMetrics>()) figs = cost_figures(k);
    std::string notes;
    for (const auto &n : k.notes) notes += fmt::format("<div class=\"note\">{}</div>", markup_escape(n));
    return fmt::format("<div class=\"check {0}\" data-check=\"{1}\"><b>{1}</b>: <span class=\"v {0}\">{0}</span> — {2}{3}"
                       "<div class=\"figs\">{4}{5}</div></div>",
                       verdict_name(k.verdict), markup_escape(k.name()), markup_escape(k.reason), notes, metrics_table(k), figs);
}

/// One series' chart, its change points labelled and the fingerprint changes marked.
std::string trend_figure(const TrendReport &t, const SeriesTrend &series, const std::string &title, const double *reference) {
    std::vector<std::pair<size_t, std::string>> cps;
    for (const auto &c : series.changes) cps.emplace_back(c.point.index, fmt::format("{:+.1f}%", 100.0 * c.point.relative_change()));
    std::vector<size_t> fps;
    for (const auto &f : t.shifts)
        for (size_t i = 0; i < series.runs.size(); ++i)
            if (series.runs[i] == f.run && i > 0) fps.push_back(i);
    std::string s = "<div><div class=\"note\">" + markup_escape(title) + " (red: change point; amber: fingerprint changed)</div>" +
                    svg_trend_chart(series.values, enum_name(series.metric), cps, fps, reference);
    for (const auto &c : series.changes) s += "<div class=\"cp-note\">" + markup_escape(describe_change(t, series, c)) + "</div>";
    return s + "</div>";
}

std::string trends(const CaseResult &c, const ReportContext &ctx) {
    const TrendReport &t = ctx.trends;
    if (t.run_ids.size() < 2) return "";
    std::string s = fmt::format("<div class=\"trend\"><b>trend over {} run(s)</b><div class=\"figs\">", t.run_ids.size());
    double tol = 0;
    if (const GoldenMetrics *g = find_metrics<GoldenMetrics>(c)) tol = number_or(g->tolerance, 0.0);
    if (const auto *err = t.find(c.case_id, c.kernel, HistoryFigure::MaxAbsError)) s += trend_figure(t, *err, "max abs error (dashed: tolerance)", tol > 0 ? &tol : nullptr);
    if (const auto *med = t.find(c.case_id, c.kernel, HistoryFigure::MedianS)) s += trend_figure(t, *med, "median time per call", nullptr);
    if (const auto *peak = t.find(c.case_id, c.kernel, HistoryFigure::PeakBytes); peak && !peak->changes.empty()) s += trend_figure(t, *peak, "peak bytes", nullptr);
    return s + "</div></div>";
}

}  // namespace

std::string html_case_section(const CaseResult &c, const std::string &id, const ReportContext &ctx) {
    const Verdict v = c.verdict();
    std::string params;
    for (const auto &[k, val] : c.params)
        if (k != "paged") params += fmt::format("{}={} ", markup_escape(k), markup_escape(format_number(&val)));
    if (const std::string paged = paged_said(c.params); !paged.empty()) params += "· " + markup_escape(paged) + " ";
    std::string s = fmt::format("<details class=\"case {0}\" id=\"{1}\"{2}><summary>{3} / {4} — <span class=\"v {0}\">{0}</span></summary>"
                                "<div class=\"mono\">{5}· version {6} · {7:.3g} s</div>",
                                verdict_name(v), id, is_failing(v) ? " open" : "", markup_escape(c.case_id), markup_escape(c.kernel), params,
                                markup_escape(c.kernel_version), c.seconds);
    for (const auto &k : c.checks) s += check_block(k);
    return s + trends(c, ctx) + "</details>\n";
}

}  // namespace attngate
