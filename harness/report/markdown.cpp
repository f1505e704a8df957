// Markdown reporter: a pull-request comment that fits on one screen (verdict, failures
// grouped by cause, what changed, the workloads' monthly cost), then the details inside
// <details> blocks, the whole under kMarkdownMaxBytes.
#include "report/markdown.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/failure_groups.hpp"

namespace attngate {

namespace {

/// Room kept for the <details> blocks after the failures table: the margins and the
/// fingerprint diff each stop at their own cap below.
constexpr size_t kMarginsCap = 3 * 1024, kFingerprintCap = 6 * 1024;
constexpr size_t kTailReserve = kMarginsCap + kFingerprintCap + 2 * 1024;
/// What the screen-sized top shows at most: groups, fingerprint changes, workloads, and the
/// bytes of one line (a kernel or case name can be arbitrarily long).
constexpr size_t kTopGroups = 10, kTopChanges = 8, kTopWorkloads = 6, kLineCap = 400;

/// s cut to at most n bytes, on a UTF-8 character boundary, with "…" when cut.
std::string clip(const std::string &s, size_t n) {
    if (s.size() <= n) return s;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n) + "…";
}

std::string details(const std::string &summary, const std::string &body) {
    return body.empty() ? "" : fmt::format("<details><summary>{}</summary>\n\n{}</details>\n\n", summary, body);
}

std::string header(const RunResults &r) {
    const bool failed = r.verdict() == Verdict::Fail;
    std::string s = fmt::format("## attngate: {} — suite `{}`\n\n", failed ? "❌ FAIL" : "✅ PASS", markdown_cell(r.suite));
    if (!r.complete) s += "> ⚠️ The run did not complete: this report is partial.\n\n";
    if (!r.load_errors.empty()) {
        s += fmt::format("**{}:**\n\n", load_errors_said(r));
        for (const auto &e : r.load_errors) s += "- " + markdown_cell(e) + "\n";
        s += "\n";
    }
    if (const std::string shard = shard_said(r); !shard.empty()) s += "> " + markdown_cell(shard) + "\n\n";
    if (const std::string unchecked = unchecked_said(r); !unchecked.empty()) s += markdown_cell(unchecked) + "\n\n";
    size_t failed_rows = 0, errors = 0;
    for (const auto &c : r.results) failed_rows += c.verdict() == Verdict::Fail, errors += c.verdict() == Verdict::Error;
    s += fmt::format("**{} of {} case × kernel failed**, {} did not run to an answer (crash, hang or kernel error).\n\n", failed_rows,
                     r.results.size(), errors);
    s += "| check | pass | fail | error | skip |\n|---|---:|---:|---:|---:|\n";
    for (const auto &c : counts_per_check(r))
        s += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_cell(enum_name(c.check)), c.pass, c.fail, c.error, c.skip);
    for (const auto &said : gating_said(r)) s += "\n**" + markdown_cell(said) + "**\n";
    if (const std::string moved = numerics_changed_said(r); !moved.empty()) s += "\n" + markdown_cell(moved) + "\n";
    if (const std::string programs = program_changed_said(r); !programs.empty()) s += "\n" + markdown_cell(programs) + "\n";
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
                                       markdown_cell(row.check->name()), row.check->verdict == Verdict::Error ? "ERROR" : "FAIL",
                                       markdown_cell(key_numbers(*row.check)), markdown_cell(row.check->reason));
        if (s.size() + line.size() > budget) break;
        s += line;
    }
    if (shown < n) s += fmt::format("\n… and {} more failures (see the HTML report).\n", n - shown);
    return s + "\n";
}

/// The top groups of failures by cause, one line each, the same lines as every report's.
std::string grouped(const std::vector<FailureGroup> &groups, const std::vector<std::string> &advice) {
    if (groups.empty()) return "No failures.\n\n";
    size_t rows = 0;
    for (const auto &g : groups) rows += g.rows.size();
    std::string s = fmt::format("### Failures by cause ({} group(s), {} failing check(s))\n\n", groups.size(), rows);
    for (size_t i = 0; i < groups.size() && i < kTopGroups; ++i)
        s += clip(fmt::format("- **{}** {} — {}", groups[i].verdict == Verdict::Error ? "ERROR" : "FAIL", markdown_cell(describe_group(groups[i])),
                              markdown_cell(group_cases(groups[i], 4))),
                  kLineCap) +
             "\n";
    if (groups.size() > kTopGroups) s += fmt::format("- … and {} more group(s), every failure below\n", groups.size() - kTopGroups);
    for (const auto &a : advice) s += clip(fmt::format("- **Try:** {}", markdown_cell(a)), kLineCap) + "\n";
    return s + "\n";
}

/// Each workload's monthly cost before and after, the price sources once below the table. A
/// workload that did not pass says why beside its verdict.
std::string workloads_summary(const RunResults &r) {
    std::string s = "### Workloads: monthly cost\n\n| workload | baseline | this run | change | verdict |\n|---|---:|---:|---:|---|\n";
    std::vector<std::string> sources;
    size_t shown = 0;
    for (const WorkloadResult &w : r.workloads) {
        const auto cell = [](const auto &field) { return markdown_cell(clip(format_field(field), 200)); };
        const std::string why = w.verdict != Verdict::Pass && w.reason ? ": " + cell(w.reason) : "";
        if (shown++ < kTopWorkloads)
            s += fmt::format("| {} | {} {} | {} {} | {}% | {}{} |\n", cell(w.workload), cell(w.baseline_monthly_cost), cell(w.currency),
                             cell(w.monthly_cost), cell(w.currency), cell(w.change_pct), cell(w.verdict), why);
        if (const std::string src = cell(w.price_source); std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
    }
    if (shown == 0) return "";
    if (shown > kTopWorkloads) s += fmt::format("| … {} more | | | | |\n", shown - kTopWorkloads);
    std::string list;
    for (size_t i = 0; i < sources.size() && i < 3; ++i) list += (i ? ", " : "") + sources[i];
    return s + fmt::format("\nPrice source: {}{}.\n\n", list, sources.size() > 3 ? ", …" : "");
}

/// The first fingerprint changes; the whole diff goes in a <details> block when longer.
std::string fingerprint_summary(const FingerprintComparison &cmp) {
    if (cmp.against.empty()) return "### What changed\n\nNo baseline fingerprint is known, so nothing to compare with.\n\n";
    if (cmp.changes.empty()) return fmt::format("### What changed (since the {})\n\nNothing: the fingerprint is identical.\n\n", cmp.against);
    std::string s = fmt::format("### What changed (since the {})\n\n", cmp.against);
    const size_t machine = machine_changes(cmp.changes), dependencies = cmp.changes.size() - machine;
    if (dependencies == 0) s += "No dependency changed.\n";
    for (size_t i = 0; i < dependencies && i < kTopChanges; ++i) s += clip("- " + markdown_cell(describe_change(cmp.changes[i])), kLineCap) + "\n";
    if (dependencies > kTopChanges) s += fmt::format("- … and {} more dependency change(s), listed below\n", dependencies - kTopChanges);
    if (machine) s += fmt::format("\nA different machine: {} difference(s), listed below.\n", machine);
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
            const std::optional<double> margin = figure_of<&GoldenMetrics::margin>(k);
            if (!margin) continue;
            const auto *d = c.params.if_contains("dtype");
            const std::pair<std::string, std::string> key{c.kernel, d && d->is_string() ? std::string(d->get_string()) : "?"};
            auto it = std::find_if(rows.begin(), rows.end(), [&](const auto &e) { return e.first == key; });
            if (it == rows.end()) it = rows.insert(rows.end(), {key, Worst{}});
            if (*margin > it->second.margin) it->second.margin = *margin, it->second.margin_case = c.case_id;
            if (const auto rm = figure_of<&GoldenMetrics::rms_margin>(k); rm && *rm > it->second.rms_margin)
                it->second.rms_margin = *rm, it->second.rms_case = c.case_id;
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

/// Every fingerprint change (up to kFingerprintCap), for the <details> block.
std::string fingerprint_all(const FingerprintComparison &cmp) {
    if (cmp.changes.size() - machine_changes(cmp.changes) <= kTopChanges && machine_changes(cmp.changes) == 0) return "";
    std::string s;
    size_t shown = 0;
    for (; shown < cmp.changes.size() && s.size() < kFingerprintCap; ++shown) {
        const FingerprintChange &c = cmp.changes[shown];
        if (c.machine && (shown == 0 || !cmp.changes[shown - 1].machine)) s += fmt::format("\nA different machine ({}):\n\n", machine_changes(cmp.changes));
        s += fmt::format("- {}\n", markdown_cell(describe_change(c)));
    }
    if (shown < cmp.changes.size()) s += fmt::format("- … and {} more\n", cmp.changes.size() - shown);
    return s + "\n";
}

}  // namespace

std::string markdown_serialize(const RunResults &r, const ReportContext &ctx) {
    const FingerprintComparison cmp = compare_fingerprints(r, ctx.history);
    std::string s = header(r);
    const std::vector<FailureGroup> groups = failure_groups(r);
    s += grouped(groups, convention_advice(r));
    s += fingerprint_summary(cmp);
    s += workloads_summary(r);
    if (!ctx.html_name.empty()) s += fmt::format("Full report: **{}** (HTML, in this job's artifacts).\n\n", markdown_cell(ctx.html_name));
    const size_t head = s.size() + kTailReserve;  // the budget left for the failures table, never wrapped below 0
    if (!groups.empty()) s += details("Every failure with its numbers", failures(r, head < kMarkdownMaxBytes ? kMarkdownMaxBytes - head : 0));
    s += details("Golden margins: how close each kernel is to its tolerance", margins(r));
    s += details("Every fingerprint change", fingerprint_all(cmp));
    return s;
}

}  // namespace attngate
