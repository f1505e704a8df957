// Console reporter.
#include "report/console.hpp"

#include <fmt/format.h>

namespace attngate {

namespace {
std::string metric(const CaseResult &r, const char *check, const char *key) {
    for (const auto &c : r.checks)
        if (c.check == check)
            if (const auto *v = c.metrics.if_contains(key); v && v->is_number()) return fmt::format("{:.2e}", v->to_number<double>());
    return "-";
}
constexpr const char *kRow = "{:>9} {:<26} {:<22} {:>9} {:>9} {:>9} {:<5} {}\n";
}  // namespace

std::string console_header() {
    return fmt::format(kRow, "#", "case", "kernel", "max_abs", "tol", "nmse", "verdict", "reason");
}

std::string console_line(const CaseResult &r, size_t done, size_t total) {
    const Verdict v = r.verdict();
    std::string verdict = verdict_name(v);
    for (auto &ch : verdict) ch = static_cast<char>(std::toupper(ch));
    return fmt::format(kRow, fmt::format("{}/{}", done, total), r.case_id, r.kernel, metric(r, "golden", "max_abs_error"),
                       metric(r, "golden", "tolerance"), metric(r, "golden", "nmse"), verdict,
                       v == Verdict::Pass ? "" : r.reason());
}

std::string console_summary(const RunResults &r, const std::string &results_path) {
    size_t pass = 0, fail = 0, skip = 0;
    std::string failures;
    for (const auto &c : r.results) {
        switch (c.verdict()) {
        case Verdict::Pass: ++pass; break;
        case Verdict::Skip: ++skip; break;
        case Verdict::Fail:
            ++fail;
            failures += fmt::format("  FAIL {} / {}: {}\n", c.case_id, c.kernel, c.reason());
            break;
        }
    }
    return fmt::format("\n{}{}: {} — {} passed, {} failed, {} skipped (suite {}, results in {})\n", failures,
                       r.verdict() == Verdict::Fail ? "GATE FAILED" : "GATE PASSED", r.verdict() == Verdict::Fail ? "drift found" : "no drift",
                       pass, fail, skip, r.suite, results_path);
}

std::string console_progress(const CaseResult &r, size_t done, size_t total, double elapsed_s) {
    const double left = done > 0 ? elapsed_s * static_cast<double>(total - done) / static_cast<double>(done) : 0.0;
    return fmt::format("\r\x1b[Kcase {} of {} ({:.0f}%) · elapsed {:.1f}s · about {:.1f}s left · {} / {}", done, total,
                       total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, elapsed_s, left, r.case_id, r.kernel);
}

std::string console_fingerprint(const json::object &fp) {
    std::string s;
    for (const auto &[k, v] : flatten_fingerprint(fp)) s += fmt::format("{}: {}\n", k, v);
    return s;
}

std::string console_fingerprint_diff(const std::vector<FingerprintChange> &changes) {
    if (changes.empty()) return "nothing moved: the fingerprints are identical\n";
    std::string s = fmt::format("{} change(s):\n", changes.size());
    for (const auto &c : changes) s += fmt::format("  {:<8} {}\n", change_kind_name(c.kind), describe_change(c));
    return s;
}

}  // namespace attngate
