// Compile check verdicts.
#include "checks/compile_check.hpp"

namespace attngate {

CheckResult compile_check(double current_s, std::optional<double> baseline_s, double threshold_pct, double min_delta_s) {
    CheckResult r{CompileMetrics{current_s, threshold_pct, std::nullopt, std::nullopt}};
    if (!baseline_s) {
        r.verdict = Verdict::Pass;
        r.reason = fmt::format("first call {:.3g} s (no compile baseline yet: attngate baseline update --checks compile)", current_s);
        return r;
    }
    const double ratio = *baseline_s > 0 ? current_s / *baseline_s : 1.0;
    r.as<CompileMetrics>().baseline_compile_s = *baseline_s;
    r.as<CompileMetrics>().ratio = ratio;
    const bool slower = ratio > 1.0 + threshold_pct / 100.0 && current_s - *baseline_s > min_delta_s;
    r.verdict = slower ? Verdict::Fail : Verdict::Pass;
    r.reason = fmt::format("first call (trace + compile) {:.3g} s against {:.3g} s, x{:.2f}{}", current_s, *baseline_s, ratio,
                           slower ? fmt::format(", over the {:g}% threshold", threshold_pct) : "");
    return r;
}

}  // namespace attngate
