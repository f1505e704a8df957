// Instruction-count verdicts: a plain threshold on the ratio to the baseline's count.
#include "checks/instructions_check.hpp"

#include <fmt/format.h>

namespace attngate {

CheckResult instructions_check(double instructions, std::optional<double> baseline, double threshold_pct,
                               const std::string &machine_class, const std::string &baseline_note, bool strict) {
    CheckResult r;
    r.check = "instructions";
    r.metrics = json::object{{"mode", "instructions"}, {"instructions", instructions}, {"threshold_pct", threshold_pct},
                             {"machine_class", machine_class}};
    if (!baseline || !(*baseline > 0)) {
        r.metrics["status"] = "no_baseline";
        r.verdict = strict ? Verdict::Fail : Verdict::Skip;
        r.reason = strict ? "ungated in strict mode: " + baseline_note : baseline_note;
        return r;
    }
    const double ratio = instructions / *baseline, threshold = threshold_pct / 100.0;
    r.metrics["baseline_instructions"] = *baseline;
    r.metrics["ratio"] = ratio;
    const char *status = ratio > 1.0 + threshold ? "regression" : ratio < 1.0 - threshold ? "improvement" : "ok";
    r.metrics["status"] = status;
    r.verdict = ratio > 1.0 + threshold ? Verdict::Fail : Verdict::Pass;
    r.reason = fmt::format("{:.0f} instructions per call, {:+.2f}% against the baseline's {:.0f} (threshold {}%): {}", instructions,
                           100.0 * (ratio - 1.0), *baseline, threshold_pct, status);
    return r;
}

}  // namespace attngate
