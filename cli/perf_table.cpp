// Formatting the perf and numerics rows of compare and ab.
#include "perf_table.hpp"

#include <fmt/format.h>

namespace attngate::cli {

namespace {

/// The checks numerics_table shows: every numerics check, and a failed golden check.
bool moved(const CheckResult &c) {
    return c.check() == CheckName::Numerics || (c.check() == CheckName::Golden && c.verdict == Verdict::Fail);
}

}  // namespace

std::string perf_table(const std::vector<PerfRow> &rows) {
    std::string s = fmt::format("{:<48} {:>8} {:>17} {:>9} {:<12} {}\n", "case/kernel", "ratio", "CI", "p (adj)", "status", "reason");
    for (const auto &r : rows)
        s += fmt::format("{:<48} {:>8.3f} {:>8.3f}-{:<8.3f} {:>9.2g} {:<12} {}\n", r.case_id + "/" + r.kernel, r.ratio, r.ci_low, r.ci_high,
                         r.p_adjusted, r.status, r.reason);
    return s;
}

json::array perf_json(const std::vector<PerfRow> &rows) {
    json::array out;
    for (const auto &r : rows)
        out.push_back(json::object{{"case", r.case_id}, {"kernel", r.kernel}, {"status", r.status}, {"ratio", r.ratio},
                                   {"ci_low", r.ci_low}, {"ci_high", r.ci_high}, {"p_adjusted", r.p_adjusted}, {"reason", r.reason}});
    return out;
}

std::string numerics_table(const std::vector<CaseResult> &results) {
    std::string s;
    for (const auto &r : results)
        for (const auto &c : r.checks) {
            if (!moved(c)) continue;
            if (s.empty()) s = fmt::format("\n{:<48} {:<9} {:<6} {}\n", "case/kernel", "check", "verdict", "what moved");
            s += fmt::format("{:<48} {:<9} {:<6} {}\n", r.case_id + "/" + r.kernel, c.name(), verdict_name(c.verdict), c.reason);
            for (const auto &n : c.notes) s += fmt::format("{:<48} {:<9} {:<6} note: {}\n", "", "", "", n);
        }
    return s;
}

json::array numerics_json(const std::vector<CaseResult> &results) {
    json::array out;
    for (const auto &r : results)
        for (const auto &c : r.checks)
            if (moved(c))
                out.push_back(json::object{{"case", r.case_id}, {"kernel", r.kernel}, {"check", c.name()}, {"verdict", verdict_name(c.verdict)},
                                           {"reason", c.reason}, {"notes", json::array(c.notes.begin(), c.notes.end())}});
    return out;
}

}  // namespace attngate::cli
