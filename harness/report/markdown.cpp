// Markdown reporter.
#include "report/markdown.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "report/escape.hpp"

namespace attngate {

namespace {

/// Room kept for the sections after the failures table and the closing lines: the
/// margins, workloads and fingerprint sections each stop at their own cap below.
constexpr size_t kMarginsCap = 3 * 1024, kWorkloadsCap = 4 * 1024, kFingerprintCap = 6 * 1024;
constexpr size_t kTailReserve = kMarginsCap + kWorkloadsCap + kFingerprintCap + 2 * 1024;

std::string header(const RunResults &r) {
    const bool failed = r.verdict() == Verdict::Fail;
    std::string s = fmt::format("## attngate: {} — suite `{}`\n\n", failed ? "❌ FAIL" : "✅ PASS", markdown_cell(r.suite));
    if (!r.complete) s += "> ⚠️ The run did not complete: this report is partial.\n\n";
    s += "| check | pass | fail | error | skip |\n|---|---:|---:|---:|---:|\n";
    for (const auto &c : counts_per_check(r))
        s += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(c.check), c.pass, c.fail, c.error, c.skip);
    return s + "\n";
}

std::string failures(const RunResults &r, size_t budget) {
    std::vector<CheckRow> rows = rows_failures_first(r);
    size_t n = 0, errors = 0;
    while (n < rows.size() && is_failing(rows[n].check->verdict)) errors += rows[n++].check->verdict == Verdict::Error;
    if (n == 0) return "No failures.\n\n";
    // A crash, hang or kernel error is not drift: it keeps its own verdict in the table.
    std::string s = errors ? fmt::format("### Errors and failures ({} errors, {} failures)\n\n", errors, n - errors)
                           : fmt::format("### Failures ({})\n\n", n);
    s += "| case | kernel | check | verdict | numbers | reason |\n|---|---|---|---|---|---|\n";
    size_t shown = 0;
    for (; shown < n; ++shown) {
        const CheckRow &row = rows[shown];
        std::string line = fmt::format("| {} | {} | {} | {} | {} | {} |\n", markdown_cell(row.result->case_id), markdown_cell(row.result->kernel),
                                       markdown_cell(row.check->check), row.check->verdict == Verdict::Error ? "ERROR" : "FAIL",
                                       markdown_cell(key_numbers(*row.check)), markdown_cell(row.check->reason));
        if (s.size() + line.size() > budget) break;
        s += line;
    }
    if (shown < n) s += fmt::format("\n… and {} more failures (see the HTML report).\n", n - shown);
    return s + "\n";
}

/// Each kernel's golden margins (error ÷ tolerance) closest to 1, per operand dtype: how
/// much room the passing kernels have, which a failures-only summary would not show.
std::string margins(const RunResults &r) {
    struct Worst {
        double margin = -1, rms_margin = -1;
        std::string margin_case, rms_case;
    };
    std::vector<std::pair<std::pair<std::string, std::string>, Worst>> rows;  // (kernel, dtype), first-seen order
    for (const auto &c : r.results)
        for (const auto &k : c.checks) {
            if (k.check != "golden") continue;
            const auto *m = k.metrics.if_contains("margin");
            if (!m || !m->is_number()) continue;
            const auto *d = c.params.if_contains("dtype");
            const std::pair<std::string, std::string> key{c.kernel, d && d->is_string() ? std::string(d->get_string()) : "?"};
            auto it = std::find_if(rows.begin(), rows.end(), [&](const auto &e) { return e.first == key; });
            if (it == rows.end()) it = rows.insert(rows.end(), {key, Worst{}});
            if (m->to_number<double>() > it->second.margin) it->second.margin = m->to_number<double>(), it->second.margin_case = c.case_id;
            if (const auto *rm = k.metrics.if_contains("rms_margin"); rm && rm->is_number() && rm->to_number<double>() > it->second.rms_margin)
                it->second.rms_margin = rm->to_number<double>(), it->second.rms_case = c.case_id;
        }
    if (rows.empty()) return "";
    std::string s = "### Closest to the tolerance (golden margin = error ÷ tolerance, worst per kernel and dtype)\n\n"
                    "| kernel | dtype | max abs margin | case | RMS margin | case |\n|---|---|---:|---|---:|---|\n";
    for (const auto &[key, w] : rows) {
        s += fmt::format("| {} | {} | {:.2f} | {} | {} | {} |\n", markdown_cell(key.first), markdown_cell(key.second), w.margin,
                         markdown_cell(w.margin_case), w.rms_margin < 0 ? "-" : fmt::format("{:.2f}", w.rms_margin), markdown_cell(w.rms_case));
        if (s.size() > kMarginsCap) return s + "| … | | | | | |\n\n";
    }
    return s + "\n";
}

std::string workloads(const RunResults &r) {
    if (r.workloads.empty()) return "";
    std::string s = "### Workloads (monthly cost)\n\n| workload | monthly | baseline | change | verdict | price source |\n|---|---:|---:|---:|---|---|\n";
    for (const auto &w : r.workloads) {
        if (!w.is_object()) continue;
        const json::object &o = w.get_object();
        s += fmt::format("| {} | {} {} | {} | {}% | {} | {} |\n", markdown_cell(format_number(o.if_contains("workload"))),
                         format_number(o.if_contains("monthly_cost")), markdown_cell(format_number(o.if_contains("currency"))),
                         format_number(o.if_contains("baseline_monthly_cost")), format_number(o.if_contains("change_pct")),
                         markdown_cell(format_number(o.if_contains("verdict"))), markdown_cell(format_number(o.if_contains("price_source"))));
        if (s.size() > kWorkloadsCap) return s + "| … | | | | | |\n\n";
    }
    return s + "\n";
}

std::string fingerprint(const RunResults &r, const ReportContext &ctx) {
    const FingerprintComparison cmp = compare_fingerprints(r, ctx.history);
    if (cmp.against.empty()) return "### What changed\n\nNo baseline fingerprint is known, so nothing to compare with.\n\n";
    if (cmp.changes.empty()) return fmt::format("### What changed (since the {})\n\nNothing: the fingerprint is identical.\n\n", cmp.against);
    std::string s = fmt::format("### What changed (since the {})\n\n", cmp.against);
    size_t shown = 0;
    for (; shown < cmp.changes.size() && s.size() < kFingerprintCap; ++shown)
        s += fmt::format("- {}\n", markdown_cell(describe_change(cmp.changes[shown])));
    if (shown < cmp.changes.size()) s += fmt::format("- … and {} more\n", cmp.changes.size() - shown);
    return s + "\n";
}

}  // namespace

std::string markdown_serialize(const RunResults &r, const ReportContext &ctx) {
    std::string s = header(r);
    s += failures(r, kMarkdownMaxBytes - kTailReserve - s.size());
    s += margins(r);
    s += workloads(r);
    s += fingerprint(r, ctx);
    if (!ctx.html_name.empty()) s += fmt::format("Full report: **{}** (HTML, in this job's artifacts).\n", markdown_cell(ctx.html_name));
    return s;
}

}  // namespace attngate
