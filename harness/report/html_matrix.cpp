// HTML reporter: the first screen — the failures grouped by cause and the verdict matrix
// (cases grouped by feature as rows, kernels as columns, one coloured block per check).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/escape.hpp"
#include "report/failure_groups.hpp"
#include "report/html.hpp"

namespace attngate {

namespace {

double param_number(const CaseResult &c, const char *key) {
    const auto *v = c.params.if_contains(key);
    return v && v->is_number() ? v->to_number<double>() : 0.0;
}

bool has_window(const CaseResult &c) {
    const auto *w = c.params.if_contains("window");
    if (!w || !w->is_array()) return false;
    return std::any_of(w->get_array().begin(), w->get_array().end(), [](const json::value &x) { return x.is_number() && x.to_number<double>() >= 0; });
}

/// The feature a case exercises first, for the matrix's row groups.
std::string case_feature(const CaseResult &c) {
    const bool causal = c.params.contains("causal") && c.params.at("causal").is_bool() && c.params.at("causal").get_bool();
    if (c.params.contains("nan_in")) return "NaN inputs";
    if (c.params.contains("paged")) return param_number(c, "seq_q") == param_number(c, "batch") ? "paged decode" : "paged, ragged";
    if (param_number(c, "softcap") > 0) return "softcap";
    if (c.params.contains("bias")) return "bias";
    if (c.params.contains("segments")) return "segments";
    if (has_window(c)) return "sliding window";
    if (param_number(c, "seq_k") != param_number(c, "seq_q")) return causal ? "causal, Sq ≠ Sk" : "Sq ≠ Sk";
    return causal ? "causal" : "dense";
}

/// A check's state in the matrix: its verdict, or "changed" for numerics whose bits moved
/// without failing.
std::string cell_state(const CheckResult &k) {
    const NumericsMetrics *n = k.get<NumericsMetrics>();
    if (n && k.verdict == Verdict::Pass && n->status == NumericsStatus::Changed) return "changed";
    return verdict_name(k.verdict);
}

/// The golden margin (error ÷ tolerance) as the block's shade: light for a wide margin,
/// deep as it nears (pass) or passes (fail) the tolerance.
std::string margin_style(const CheckResult &k) {
    const std::optional<double> margin = figure_of<&GoldenMetrics::margin>(k);
    if (!margin) return "";
    const double t = std::clamp(*margin, 0.0, k.verdict == Verdict::Fail ? 4.0 : 1.0) / (k.verdict == Verdict::Fail ? 4.0 : 1.0);
    return k.verdict == Verdict::Fail ? fmt::format(" style=\"background:hsl(0,75%,{:.0f}%)\"", 55 - 25 * t)
                                      : fmt::format(" style=\"background:hsl({:.0f},{:.0f}%,{:.0f}%)\"", 135 - 40 * t, 45 + 15 * t, 70 - 32 * t);
}

/// A check's block: its state's colour and its letter. The script titles it with its
/// numbers and names it (data-check, data-verdict) from the rows' data, once in the file.
std::string check_block(const CheckResult &k) {
    return fmt::format("<span class=\"ck {}\"{}>{}</span>", cell_state(k), margin_style(k), markup_escape(std::string(k.name()).substr(0, 1)));
}

/// One case x kernel: a block per check in the matrix's check order, a blank where the
/// check did not run, so that each check keeps its place down a column.
std::string matrix_cell(const RunResults &r, const CaseResult *c, const std::vector<std::string> &checks) {
    if (!c) return "<td class=\"mcell none\">·</td>";
    std::string blocks;
    for (const auto &name : checks) {
        const auto k = std::find_if(c->checks.begin(), c->checks.end(), [&](const CheckResult &x) { return x.name() == name; });
        blocks += k == c->checks.end() ? "<span class=\"ck blank\"></span>" : check_block(*k);
    }
    return fmt::format("<td class=\"mcell\"><a class=\"mc\" href=\"#{}\">{}</a></td>", case_anchor(r, c), blocks);
}

template <typename T>
void add_unique(std::vector<T> &v, const T &x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

std::string matrix_legend(const std::vector<std::string> &checks) {
    std::string s = "<p class=\"legend\">";
    for (const char *v : {"pass", "fail", "error", "skip", "changed"}) s += fmt::format("<span class=\"ck {0}\">&nbsp;</span> {0} ", v);
    s += "· golden shaded by error ÷ tolerance · letters: ";
    for (const auto &c : checks) s += fmt::format("<b>{}</b> {} ", markup_escape(c.substr(0, 1)), markup_escape(c));
    return s + "· hover for the numbers, click for the details</p>";
}

}  // namespace

std::string html_matrix(const RunResults &r) {
    std::vector<std::string> kernels, cases, features, checks;
    for (const auto &c : r.results) {
        add_unique(kernels, c.kernel), add_unique(cases, c.case_id), add_unique(features, case_feature(c));
        for (const auto &k : c.checks) add_unique(checks, std::string(k.name()));
    }
    std::string s = "<h2 id=\"matrix-title\">Verdict matrix</h2>" + matrix_legend(checks) +
                    fmt::format("<table id=\"matrix\" class=\"matrix\" data-checks=\"{}\"><thead><tr><th>case</th>", markup_escape(fmt::format("{}", fmt::join(checks, " "))));
    for (const auto &k : kernels) s += fmt::format("<th class=\"kernel\">{}</th>", markup_escape(k));
    s += "</tr></thead><tbody>\n";
    for (const auto &f : features) {
        s += fmt::format("<tr class=\"feature\"><th colspan=\"{}\">{}</th></tr>\n", kernels.size() + 1, markup_escape(f));
        for (const auto &id : cases) {
            const CaseResult *any = nullptr;
            for (const auto &k : kernels) any = any ? any : r.find(id, k);
            if (!any || case_feature(*any) != f) continue;
            const std::string paged = paged_said(any->params);
            s += paged.empty() ? fmt::format("<tr><td class=\"case\">{}</td>", markup_escape(id))
                               : fmt::format("<tr><td class=\"case\">{}<div class=\"note\">{}</div></td>", markup_escape(id), markup_escape(paged));
            for (const auto &k : kernels) s += matrix_cell(r, r.find(id, k), checks);
            s += "</tr>\n";
        }
    }
    return s + "</tbody></table>\n";
}

std::string html_failure_groups(const RunResults &r) {
    const std::vector<FailureGroup> groups = failure_groups(r);
    if (groups.empty()) return "<h2 id=\"groups-title\">Failures by cause</h2><p id=\"groups\">No failures.</p>\n";
    std::string s = fmt::format("<h2 id=\"groups-title\">Failures by cause ({} group(s))</h2><ol id=\"groups\">", groups.size());
    for (const auto &g : groups) {
        const char *v = verdict_name(g.verdict);
        s += fmt::format("<li class=\"group {0}\" data-kernel=\"{1}\" data-check=\"{2}\" data-count=\"{3}\"><details><summary><span class=\"v {0}\">{4}</span> "
                         "<span class=\"group-line\">{5}</span></summary><ul>",
                         v, markup_escape(g.kernel), markup_escape(enum_name(g.check)), g.rows.size(), v == std::string("error") ? "ERROR" : "FAIL",
                         markup_escape(describe_group(g)));
        for (const auto &row : g.rows)
            s += fmt::format("<li><a href=\"#{}\">{}</a> <span class=\"num\">{}</span> — {}</li>", case_anchor(r, row.result), markup_escape(row.result->case_id),
                             markup_escape(key_numbers(*row.check)), markup_escape(row.check->reason));
        s += "</ul></details></li>";
    }
    s += "</ol>\n";
    for (const auto &advice : convention_advice(r)) s += fmt::format("<p class=\"advice\">{}</p>\n", markup_escape(advice));
    return s;
}

}  // namespace attngate
