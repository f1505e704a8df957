// HTML reporter: the document, its verdict header, the fingerprint diff, workloads and the
// results table. The per case x kernel sections and the data they are drawn from are in
// html_sections.cpp, the script that draws them in html_assets.hpp.
#include "report/html.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "io/files.hpp"
#include "report/escape.hpp"
#include "report/html_assets.hpp"

namespace attngate {

namespace {

std::string verdict_header(const RunResults &r) {
    const Verdict v = r.verdict();
    size_t failed = 0, errors = 0;
    for (const auto &c : r.results) failed += c.verdict() == Verdict::Fail, errors += c.verdict() == Verdict::Error;
    std::string s = fmt::format("<div class=\"verdict {}\" id=\"verdict\"><span class=\"big\">{}</span>{} of {} case × kernel failed, "
                                "{} did not run to an answer (crash, hang or kernel error){}",
                                verdict_name(v), upper(verdict_name(v)), failed, r.results.size(), errors,
                                r.complete ? "" : " — <b>the run did not complete; this report is partial</b>");
    if (!r.load_errors.empty()) {
        s += fmt::format("<div id=\"load-errors\"><p><b>{}:</b></p><ul>", markup_escape(load_errors_said(r)));
        for (const auto &e : r.load_errors) s += fmt::format("<li><code>{}</code></li>", markup_escape(e));
        s += "</ul></div>";
    }
    if (const std::string shard = shard_said(r); !shard.empty()) s += fmt::format("<p class=\"coverage\" id=\"shard\"><b>{}</b></p>", markup_escape(shard));
    if (const std::string unchecked = unchecked_said(r); !unchecked.empty())
        s += fmt::format("<p class=\"coverage\" id=\"unchecked\">{}</p>", markup_escape(unchecked));
    s += "<table class=\"counts\"><tr><th>check</th><th>pass</th><th>fail</th><th>error</th><th>skip</th></tr>";
    for (const auto &c : counts_per_check(r))
        s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", markup_escape(enum_name(c.check)), c.pass, c.fail,
                         c.error, c.skip);
    s += "</table>";
    for (CheckName check : {CheckName::Perf, CheckName::Numerics})
        if (const std::string said = coverage_said(check_coverage(r, check)); !said.empty())
            s += fmt::format("<p class=\"coverage\" id=\"{}-coverage\">{}</p>", enum_name(check), markup_escape(said));
    return s + "</div>\n";
}

std::string fingerprint_section(const RunResults &r, const ReportContext &ctx) {
    const FingerprintComparison cmp = compare_fingerprints(r, ctx.history);
    std::string s = "<h2 id=\"fingerprint\">What changed</h2>";
    if (cmp.against.empty())
        return s + "<p class=\"note\">No baseline fingerprint is known (baselines made before fingerprints were recorded, and no --history), so nothing to compare with.</p>\n";
    if (cmp.changes.empty()) return s + fmt::format("<p>Nothing: the fingerprint is identical to the {}'s.</p>\n", cmp.against);
    const size_t machine = machine_changes(cmp.changes), dependencies = cmp.changes.size() - machine;
    const auto items = [&](size_t from, size_t to) {
        std::string ul = "<ul class=\"changes\">";
        for (size_t i = from; i < to; ++i)
            ul += fmt::format("<li class=\"{}\">{}</li>", change_kind_name(cmp.changes[i].kind), markup_escape(describe_change(cmp.changes[i])));
        return ul + "</ul>";
    };
    s += dependencies ? fmt::format("<p>{} dependency change(s) since the {}:</p>", dependencies, cmp.against) + items(0, dependencies)
                      : fmt::format("<p id=\"no-dependency-change\">No dependency changed since the {}.</p>", cmp.against);
    if (machine)
        s += fmt::format("<details id=\"machine-changes\"><summary>a different machine: {} difference(s)</summary>{}</details>", machine,
                         items(dependencies, cmp.changes.size()));
    return s + "\n";
}

/// Per workload its monthly cost before and after (numbers and bars); the price sources once, below.
std::string workloads_section(const RunResults &r) {
    if (r.workloads.empty()) return "";
    std::string s = "<h2 id=\"workloads\">Workloads</h2><table class=\"workloads\"><tr><th>workload</th><th>monthly cost</th><th>baseline</th>"
                    "<th>change %</th><th>before → after</th><th>leak survival h</th><th>verdict</th><th>reason</th></tr>";
    std::vector<std::string> sources;
    for (const WorkloadResult &w : r.workloads) {
        const auto field = [](const auto &f) { return markup_escape(format_field(f)); };
        const auto number = [](const std::optional<double> &x) { return x && std::isfinite(*x) ? *x : 0.0; };
        // The bars are drawn by the script from the cell's numbers, as the details' charts are.
        s += fmt::format("<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td class=\"bars\" data-bars=\"{}\" data-unit=\"{}\"></td><td>{}</td>"
                         "<td><span class=\"v {}\">{}</span></td><td>{}</td></tr>",
                         field(w.workload), field(w.monthly_cost), field(w.currency), field(w.baseline_monthly_cost), field(w.change_pct),
                         markup_escape(json::serialize(json::array{json::array{"baseline", number(w.baseline_monthly_cost)},
                                                                   json::array{"this run", number(w.monthly_cost)}})),
                         field(w.currency), field(w.leak_survival_hours), field(w.verdict), field(w.verdict), field(w.reason));
        if (std::find(sources.begin(), sources.end(), field(w.price_source)) == sources.end()) sources.push_back(field(w.price_source));
    }
    std::string list;
    for (const auto &src : sources) list += (list.empty() ? "" : "; ") + src;
    return s + "</table><p class=\"note footnote\">Price source: " + list + ".</p>\n";
}

/// Every change point of the history, and the runs where the fingerprint changed.
std::string trends_section(const ReportContext &ctx) {
    const TrendReport &t = ctx.trends;
    if (t.run_ids.size() < 2) return "";
    std::string s = fmt::format("<h2 id=\"trends\">Trends over {} runs</h2>", t.run_ids.size());
    if (t.change_count() == 0) s += "<p>No change point: no series moved by more than the noise over these runs.</p>";
    else {
        s += "<table class=\"trends\"><tr><th>case</th><th>kernel</th><th>metric</th><th>change</th><th>what</th></tr>";
        for (const auto &series : t.series)
            for (const auto &c : series.changes)
                s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"drift\">{:+.1f}%</td><td>{}</td></tr>", markup_escape(series.case_id),
                                 markup_escape(series.kernel), markup_escape(enum_name(series.metric)), 100.0 * c.point.relative_change(),
                                 markup_escape(describe_change(t, series, c)));
        s += "</table>";
    }
    for (const auto &f : t.shifts) {
        std::string what;
        for (const auto &c : f.changes) what += (what.empty() ? "" : "; ") + c;
        s += fmt::format("<p class=\"note fp-shift\">fingerprint changed at run {} ({}): {}</p>", f.run + 1, markup_escape(t.run_times[f.run]),
                         markup_escape(what.empty() ? "fingerprint not stored" : what));
    }
    return s + "\n";
}

/// The table of every case x kernel x check: its rows are built by the script from the rows'
/// data (failures first), so each row's numbers are in the file once.
std::string results_table() {
    return "<h2 id=\"table\">Every case × kernel × check</h2><div class=\"controls\"><input type=\"search\" id=\"filter\" "
           "placeholder=\"filter: case, kernel, check, verdict…\"> <label><input type=\"checkbox\" id=\"only-fail\"> failures only</label> "
           "· <span id=\"shown\"></span> rows shown</div><noscript><p class=\"note\">This table and the details below are drawn by the report's "
           "script; with scripts off, the verdict, the failures by cause and the matrix above say what failed and why.</p></noscript>"
           "<table id=\"results\"><thead><tr><th>case</th><th>kernel</th><th>check</th><th>verdict</th><th>numbers</th><th>reason</th></tr></thead>"
           "<tbody></tbody></table>\n";
}

}  // namespace

std::string case_anchor(const RunResults &r, const CaseResult *c) { return fmt::format("r-{}", c - r.results.data()); }

std::string html_serialize(const RunResults &r, const ReportContext &ctx) {
    // Defence in depth behind the escaping: no script runs but ours (by hash), no inline
    // handler, nothing loaded from anywhere.
    const std::string csp = fmt::format("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{}'",
                                        sha256_base64(html_assets::kScript));
    std::string s = fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                                "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">"
                                "<title>attngate {}: {}</title><style>{}</style></head><body>\n",
                                csp, markup_escape(r.suite), upper(verdict_name(r.verdict())), html_assets::kStyle);
    s += fmt::format("<h1>attngate — suite {}</h1><p class=\"mono\">{} · started {} · suite file {}</p>\n", markup_escape(r.suite),
                     markup_escape(r.tool_version), markup_escape(r.started_at), markup_escape(r.suite_file));
    s += verdict_header(r);
    s += html_failure_groups(r);
    s += html_matrix(r);
    s += fingerprint_section(r, ctx);
    s += html_programs(r);
    s += trends_section(ctx);
    s += workloads_section(r);
    s += results_table();
    s += "<h2 id=\"cases\">Per case × kernel</h2>\n";
    if (ctx.trends.run_ids.size() < 2)
        s += "<p class=\"note\" id=\"no-history\">No history given: pass --history with earlier results.json files (or their directory) to draw trends.</p>\n";
    s += "<div id=\"sections\"></div>\n";
    return s + html_row_data(r, ctx) + fmt::format("<script>{}</script></body></html>\n", html_assets::kScript);
}

}  // namespace attngate
