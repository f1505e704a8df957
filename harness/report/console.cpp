// Console reporter.
#include "report/console.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/failure_groups.hpp"

namespace attngate {

namespace {
/// A golden figure of the row, "-" when it was not measured.
std::string golden_figure(const CaseResult &r, std::optional<double> GoldenMetrics::*field, const char *format = "{:.2e}") {
    const GoldenMetrics *g = find_metrics<GoldenMetrics>(r);
    const std::optional<double> v = g ? g->*field : std::nullopt;
    return v && std::isfinite(*v) ? fmt::format(fmt::runtime(format), *v) : "-";
}
constexpr const char *kRow = "{:>9} {:<26} {:<22} {:>9} {:>9} {:>6} {:>6} {:<7} {}\n";
constexpr size_t kCaseWidth = 26, kKernelWidth = 22;

}  // namespace

std::string console_header() {
    return fmt::format(kRow, "#", "case", "kernel", "max_abs", "tol", "margin", "rms_m", "verdict", "reason");
}

std::string console_line(const CaseResult &r, size_t done, size_t total) {
    const Verdict v = r.verdict();
    return fmt::format(kRow, fmt::format("{}/{}", done, total), fit_columns(terminal_text(r.case_id), kCaseWidth), fit_columns(terminal_text(r.kernel), kKernelWidth),
                       golden_figure(r, &GoldenMetrics::max_abs_error), golden_figure(r, &GoldenMetrics::tolerance),
                       golden_figure(r, &GoldenMetrics::margin, "{:.2f}"), golden_figure(r, &GoldenMetrics::rms_margin, "{:.2f}"),
                       upper(verdict_name(v)), v == Verdict::Pass ? "" : terminal_text(r.reason()));
}

std::string grouped_failures(const RunResults &r) {
    constexpr size_t kRowsPerGroup = 5;
    std::string lines;
    for (const auto &g : failure_groups(r)) {
        lines += fmt::format("  {} {}\n", upper(verdict_name(g.verdict)), terminal_text(describe_group(g)));
        for (size_t i = 0; i < g.rows.size() && i < kRowsPerGroup; ++i)
            lines += fmt::format("      {} {} / {}: {}: {}\n", upper(verdict_name(g.verdict)), terminal_text(g.rows[i].result->case_id),
                                 terminal_text(g.kernel), enum_name(g.check), terminal_text(g.rows[i].check->reason));
        if (g.rows.size() > kRowsPerGroup) lines += fmt::format("      … and {} more\n", g.rows.size() - kRowsPerGroup);
    }
    for (const auto &advice : convention_advice(r)) lines += fmt::format("  → {}\n", terminal_text(advice));
    return lines;
}

std::string console_summary(const RunResults &r, const std::string &results_path) {
    size_t counts[4] = {0, 0, 0, 0};  // indexed by Verdict
    for (const auto &c : r.results) ++counts[static_cast<int>(c.verdict())];
    const size_t pass = counts[0], fail = counts[1], skip = counts[2], error = counts[3];
    const bool failed = r.verdict() == Verdict::Fail;
    const std::string what = !failed ? "no drift"
                             : !r.load_errors.empty() ? load_errors_said(r)
                             : !r.complete ? "the run did not complete, its results are partial"
                             : error && fail ? "drift and kernel errors found"
                             : error         ? "kernel errors (crash, hang or error) found"
                                             : "drift found";
    std::string gated;
    for (const auto &said : gating_said(r)) gated += "; " + terminal_text(said);
    std::string moved = numerics_changed_said(r);
    if (const std::string programs = program_changed_said(r); !programs.empty()) moved += (moved.empty() ? "" : "\n") + programs;
    if (const std::string shard = shard_said(r); !shard.empty()) moved += (moved.empty() ? "" : "\n") + shard;
    std::string unloaded;
    for (const auto &e : r.load_errors) unloaded += fmt::format("did not load: {}\n", terminal_text(e));  // an adapter's words
    return fmt::format("\n{}{}{}{}: {} — {} passed, {} failed, {} errors, {} skipped{} (suite {}, results in {})\n", unloaded, grouped_failures(r),
                       moved.empty() ? "" : terminal_text(moved) + "\n",
                       failed ? "GATE FAILED" : "GATE PASSED", what, pass, fail, error, skip, gated,
                       terminal_text(r.suite), terminal_text(results_path));
}

std::string console_progress(const CaseResult &r, size_t done, size_t total, double elapsed_s) {
    const double left = done > 0 ? elapsed_s * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
    return fmt::format("\r\x1b[Kcase {} of {} ({:.0f}%) · elapsed {:.1f}s · about {:.1f}s left · {} / {}", done, total,
                       total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, elapsed_s, left, terminal_text(r.case_id), terminal_text(r.kernel));
}

std::string console_fingerprint(const json::object &fp) {
    std::string s;
    for (const auto &[k, v] : flatten_fingerprint(fp)) s += fmt::format("{}: {}\n", terminal_text(k), terminal_text(v));
    return s;
}

std::string console_fingerprint_diff(const std::vector<FingerprintChange> &changes) {
    if (changes.empty()) return "nothing moved: no dependency and no difference of the machine\n";
    const size_t machine = machine_changes(changes);
    std::string s = machine == changes.size() ? "No dependency changed.\n" : fmt::format("{} dependency change(s):\n", changes.size() - machine);
    for (const auto &c : changes) {
        if (c.machine && &c == &changes[changes.size() - machine]) s += fmt::format("a different machine: {} difference(s):\n", machine);
        s += fmt::format("  {:<8} {}\n", change_kind_name(c.kind), terminal_text(describe_change(c)));
    }
    return s;
}

}  // namespace attngate
