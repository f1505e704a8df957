// The HTML report's "TPU programs changed" section: which kernels' programs changed on
// which cases, by how many lines, with each unified diff collapsed under its row.
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/escape.hpp"
#include "report/html.hpp"

namespace attngate {

namespace {

/// One diff line wrapped in a span classed by its first character, for colour.
std::string diff_markup(const std::string &diff) {
    std::string out;
    size_t start = 0;
    while (start < diff.size()) {
        size_t end = diff.find('\n', start);
        if (end == std::string::npos) end = diff.size();
        const std::string_view line(diff.data() + start, end - start);
        const char *cls = line.starts_with("@@") ? "hunk" : line.starts_with("+") ? "add" : line.starts_with("-") ? "del" : "ctx";
        out += fmt::format("<span class=\"{}\">{}</span>\n", cls, markup_escape(line));
        start = end + 1;
    }
    return out;
}

}  // namespace

std::string html_programs(const RunResults &r) {
    std::map<std::string, std::pair<size_t, size_t>> per_kernel;  // kernel -> (changed rows, rows with a program)
    std::string rows;
    for (const auto &row : r.results)
        for (const auto &k : row.checks) {
            const ProgramMetrics *m = k.get<ProgramMetrics>();
            if (!m || !m->status) continue;
            auto &[changed, compared] = per_kernel[row.kernel];
            ++compared;
            if (m->status != ProgramStatus::Changed) continue;
            ++changed;
            rows += fmt::format(
                "<details class=\"program-diff {}\"><summary><b>{}</b> on {}: {} (+{} −{} lines, against {})</summary>"
                "<pre class=\"diff\">{}</pre></details>\n",
                k.verdict == Verdict::Fail ? "fail" : "changed", markup_escape(row.kernel), markup_escape(row.case_id),
                markup_escape(fmt::format("{}", fmt::join(m->changed_parts.value_or(std::vector<std::string>{}), ", "))),
                m->lines_added.value_or(0), m->lines_removed.value_or(0), markup_escape(m->against.value_or("?")), diff_markup(m->diff.value_or("")));
        }
    if (rows.empty()) return "";
    std::string kernels;
    for (const auto &[kernel, counts] : per_kernel)
        if (counts.first)
            kernels += fmt::format("<li><b>{}</b>: {} of {} case(s) changed</li>", markup_escape(kernel), counts.first, counts.second);
    return "<h2 id=\"programs\">TPU programs changed</h2>\n"
           "<style>pre.diff{font-size:12px;max-height:32em;overflow:auto;background:#f7f7f7;padding:.5em}"
           "pre.diff .add{color:#1a7f37}pre.diff .del{color:#cf222e}pre.diff .hunk{color:#6639ba}"
           "details.program-diff{margin:.2em 0}details.program-diff.fail>summary{color:#cf222e}</style>\n"
           "<p>What each kernel would run on the TPU (its Mosaic bodies and the StableHLO around them, lowered without a TPU) "
           "differs from the reference. Open a row for its diff.</p>\n<ul id=\"program-kernels\">" +
           kernels + "</ul>\n" + rows;
}

}  // namespace attngate
