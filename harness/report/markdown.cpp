// Markdown reporter.
#include "report/markdown.hpp"

#include <fmt/format.h>

#include "report/escape.hpp"

namespace attngate {

namespace {

/// Room kept for the sections after the failures table and the closing lines.
constexpr size_t kTailReserve = 12 * 1024;

std::string header(const RunResults &r) {
    const bool failed = r.verdict() == Verdict::Fail;
    std::string s = fmt::format("## attngate: {} — suite `{}`\n\n", failed ? "❌ FAIL" : "✅ PASS", markdown_cell(r.suite));
    if (!r.complete) s += "> ⚠️ The run did not complete: this report is partial.\n\n";
    s += "| check | pass | fail | skip |\n|---|---:|---:|---:|\n";
    for (const auto &c : counts_per_check(r)) s += fmt::format("| {} | {} | {} | {} |\n", markdown_cell(c.check), c.pass, c.fail, c.skip);
    return s + "\n";
}

std::string failures(const RunResults &r, size_t budget) {
    std::vector<CheckRow> rows = rows_failures_first(r);
    size_t n = 0;
    while (n < rows.size() && rows[n].check->verdict == Verdict::Fail) ++n;
    if (n == 0) return "No failures.\n\n";
    std::string s = fmt::format("### Failures ({})\n\n| case | kernel | check | numbers | reason |\n|---|---|---|---|---|\n", n);
    size_t shown = 0;
    for (; shown < n; ++shown) {
        const CheckRow &row = rows[shown];
        std::string line = fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(row.result->case_id), markdown_cell(row.result->kernel),
                                       markdown_cell(row.check->check), markdown_cell(key_numbers(*row.check)), markdown_cell(row.check->reason));
        if (s.size() + line.size() > budget) break;
        s += line;
    }
    if (shown < n) s += fmt::format("\n… and {} more failures (see the HTML report).\n", n - shown);
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
        if (s.size() > kTailReserve / 3) return s + "| … | | | | | |\n\n";
    }
    return s + "\n";
}

std::string fingerprint(const RunResults &r, const ReportContext &ctx) {
    const FingerprintComparison cmp = compare_fingerprints(r, ctx.history);
    if (cmp.against.empty()) return "### What changed\n\nNo baseline fingerprint is known, so nothing to compare with.\n\n";
    if (cmp.changes.empty()) return fmt::format("### What changed (since the {})\n\nNothing: the fingerprint is identical.\n\n", cmp.against);
    std::string s = fmt::format("### What changed (since the {})\n\n", cmp.against);
    size_t shown = 0;
    for (; shown < cmp.changes.size() && s.size() < kTailReserve / 2; ++shown)
        s += fmt::format("- {}\n", markdown_cell(describe_change(cmp.changes[shown])));
    if (shown < cmp.changes.size()) s += fmt::format("- … and {} more\n", cmp.changes.size() - shown);
    return s + "\n";
}

}  // namespace

std::string markdown_serialize(const RunResults &r, const ReportContext &ctx) {
    std::string s = header(r);
    s += failures(r, kMarkdownMaxBytes - kTailReserve - s.size());
    s += workloads(r);
    s += fingerprint(r, ctx);
    if (!ctx.html_name.empty()) s += fmt::format("Full report: **{}** (HTML, in this job's artifacts).\n", markdown_cell(ctx.html_name));
    return s;
}

}  // namespace attngate
