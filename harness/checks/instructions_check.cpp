// Instruction-count verdicts: a plain threshold on the ratio to the baseline's count.
#include "checks/instructions_check.hpp"

#include <fmt/format.h>

namespace attngate {

CheckResult instructions_check(double instructions, std::optional<double> baseline, double threshold_pct,
                               const std::string &machine_class, const std::string &baseline_note, bool strict) {
    InstructionsMetrics m;
    m.mode = "instructions", m.instructions = instructions, m.threshold_pct = threshold_pct, m.machine_class = machine_class;
    CheckResult r(std::move(m));
    auto &out = r.as<InstructionsMetrics>();
    if (!baseline || !(*baseline > 0)) {
        out.status = PerfCheckStatus::NoBaseline;
        r.verdict = strict ? Verdict::Fail : Verdict::Skip;
        r.reason = strict ? "ungated in strict mode: " + baseline_note : baseline_note;
        return r;
    }
    const double ratio = instructions / *baseline, threshold = threshold_pct / 100.0;
    out.baseline_instructions = *baseline;
    out.ratio = ratio;
    out.status = ratio > 1.0 + threshold ? PerfCheckStatus::Regression : ratio < 1.0 - threshold ? PerfCheckStatus::Improvement : PerfCheckStatus::Ok;
    r.verdict = ratio > 1.0 + threshold ? Verdict::Fail : Verdict::Pass;
    r.reason = fmt::format("{:.0f} instructions per call, {:+.2f}% against the baseline's {:.0f} (threshold {}%): {}", instructions,
                           100.0 * (ratio - 1.0), *baseline, threshold_pct, enum_name(*out.status));
    return r;
}

}  // namespace attngate
