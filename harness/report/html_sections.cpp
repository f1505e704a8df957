// HTML reporter: one case x kernel's section — numerics with the error heatmap, memory,
// throughput, cost, any other check's metrics, and trend charts over the history.
#include <cmath>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/html.hpp"
#include "report/svg.hpp"

namespace attngate {

namespace {

const json::value *metric(const CheckResult &k, const char *name) { return k.metrics.if_contains(name); }

double number_or(const json::value *v, double def) { return v && v->is_number() ? v->to_number<double>() : def; }

/// Every scalar metric as a two-column table (arrays and objects are drawn, not listed).
std::string metrics_table(const CheckResult &k) {
    std::string s = "<table class=\"metrics\">";
    for (const auto &[name, v] : k.metrics)
        if (!v.is_array() && !v.is_object())
            s += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td></tr>", markup_escape(name), markup_escape(format_number(&v)));
    return s + "</table>";
}

std::string golden_figures(const CheckResult &k) {
    const auto *map = metric(k, "error_map");
    if (!map || !map->is_object()) return "<p class=\"note\">no error map recorded</p>";
    return "<div><div class=\"note\">max abs error over sequence position × value head dim</div>" +
           svg_heatmap(map->get_object(), number_or(metric(k, "tolerance"), 0.0)) + "</div>";
}

std::string memory_figures(const CheckResult &k) {
    std::string s;
    if (const auto live = json_numbers(metric(k, "heap_live_bytes")); !live.empty())
        s += "<div><div class=\"note\">live heap bytes after each call</div>" + svg_line_chart(live, "bytes") + "</div>";
    if (const auto rss = json_numbers(metric(k, "rss_bytes")); !rss.empty())
        s += "<div><div class=\"note\">RSS after each call</div>" + svg_line_chart(rss, "bytes") + "</div>";
    std::vector<std::pair<std::string, double>> bars;
    if (const auto *p = metric(k, "abi_peak_bytes"); p && p->is_number()) bars.emplace_back("peak", p->to_number<double>());
    if (const auto *b = metric(k, "peak_baseline_bytes"); b && b->is_number()) bars.emplace_back("baseline", b->to_number<double>());
    if (!bars.empty()) s += "<div><div class=\"note\">peak against baseline</div>" + svg_bars(bars, "bytes") + "</div>";
    if (const auto *crash = metric(k, "crash"); crash && crash->is_object())
        s += fmt::format("<pre class=\"mono\">crash: {}</pre>", markup_escape(json::serialize(*crash)));
    return s;
}

std::string perf_figures(const CheckResult &k) {
    const auto cur = json_numbers(metric(k, "samples_s")), base = json_numbers(metric(k, "baseline_samples_s"));
    std::string s = "<div><div class=\"note\">time per repetition, this run against the baseline</div>" + svg_distribution(cur, base, "seconds") + "</div>";
    if (const auto *ratio = metric(k, "ratio"); ratio && ratio->is_number())
        s += fmt::format("<p>time ratio (this run / baseline) <b>{}</b>, {:.3g}% CI [{}, {}], p = {} (adjusted {}), status {}</p>", format_number(ratio),
                         100 * number_or(metric(k, "ci_level"), 0.95), format_number(metric(k, "ci_low")), format_number(metric(k, "ci_high")), format_number(metric(k, "p_value")),
                         format_number(metric(k, "p_adjusted")), markup_escape(format_number(metric(k, "status"))));
    const double threshold = 1.0 + number_or(metric(k, "threshold_pct"), NAN) / 100.0;  // a percent becomes a ratio here, once
    if (const std::string ci = svg_ratio_interval(number_or(metric(k, "ratio"), NAN), number_or(metric(k, "ci_low"), NAN),
                                                  number_or(metric(k, "ci_high"), NAN), threshold);
        !ci.empty())
        s += "<div><div class=\"note\">time ratio with its confidence interval against the threshold</div>" + ci + "</div>";
    return s;
}

std::string cost_figures(const CheckResult &k) {
    return fmt::format("<p>{} {} per million tokens (baseline {}) on {} at {} per hour — price source: {} ({})</p>",
                       format_number(metric(k, "usd_per_million_tokens")), markup_escape(format_number(metric(k, "currency"))),
                       format_number(metric(k, "baseline_usd_per_million_tokens")), markup_escape(format_number(metric(k, "device_class"))),
                       format_number(metric(k, "price_per_hour")), markup_escape(format_number(metric(k, "price_source"))),
                       markup_escape(format_number(metric(k, "price_date"))));
}

std::string check_block(const CheckResult &k) {
    std::string figs;
    if (k.check == "golden") figs = golden_figures(k);
    else if (k.check == "memory") figs = memory_figures(k);
    else if (k.check == "perf") figs = perf_figures(k);
    else if (k.check == "cost") figs = cost_figures(k);
    std::string notes;
    for (const auto &n : k.notes) notes += fmt::format("<div class=\"note\">{}</div>", markup_escape(n));
    return fmt::format("<div class=\"check {0}\" data-check=\"{1}\"><b>{1}</b>: <span class=\"v {0}\">{0}</span> — {2}{3}"
                       "<div class=\"figs\">{4}{5}</div></div>",
                       verdict_name(k.verdict), markup_escape(k.check), markup_escape(k.reason), notes, metrics_table(k), figs);
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
                    svg_trend_chart(series.values, series.metric, cps, fps, reference);
    for (const auto &c : series.changes) s += "<div class=\"cp-note\">" + markup_escape(describe_change(t, series, c)) + "</div>";
    return s + "</div>";
}

std::string trends(const CaseResult &c, const ReportContext &ctx) {
    const TrendReport &t = ctx.trends;
    if (t.run_ids.size() < 2) return "";
    std::string s = fmt::format("<div class=\"trend\"><b>trend over {} run(s)</b><div class=\"figs\">", t.run_ids.size());
    double tol = 0;
    for (const auto &k : c.checks)
        if (k.check == "golden") tol = number_or(metric(k, "tolerance"), 0.0);
    if (const auto *err = t.find(c.case_id, c.kernel, "max_abs_error")) s += trend_figure(t, *err, "max abs error (dashed: tolerance)", tol > 0 ? &tol : nullptr);
    if (const auto *med = t.find(c.case_id, c.kernel, "median_s")) s += trend_figure(t, *med, "median time per call", nullptr);
    if (const auto *peak = t.find(c.case_id, c.kernel, "peak_bytes"); peak && !peak->changes.empty()) s += trend_figure(t, *peak, "peak bytes", nullptr);
    return s + "</div></div>";
}

}  // namespace

std::string html_case_section(const CaseResult &c, const std::string &id, const ReportContext &ctx) {
    const Verdict v = c.verdict();
    std::string params;
    for (const auto &[k, val] : c.params) params += fmt::format("{}={} ", markup_escape(k), markup_escape(format_number(&val)));
    std::string s = fmt::format("<details class=\"case {0}\" id=\"{1}\"{2}><summary>{3} / {4} — <span class=\"v {0}\">{0}</span></summary>"
                                "<div class=\"mono\">{5}· version {6} · {7:.3g} s</div>",
                                verdict_name(v), id, is_failing(v) ? " open" : "", markup_escape(c.case_id), markup_escape(c.kernel), params,
                                markup_escape(c.kernel_version), c.seconds);
    for (const auto &k : c.checks) s += check_block(k);
    return s + trends(c, ctx) + "</details>\n";
}

}  // namespace attngate
