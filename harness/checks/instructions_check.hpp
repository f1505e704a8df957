// The instruction-count perf check (`--perf-metric instructions`): one kernel call's
// instructions, counted under callgrind, against the baseline's count. The count is
// deterministic for the same binary and inputs whatever else the machine is doing, so
// the rule is a plain threshold with no noise model.
#pragma once

#include <optional>
#include <string>

#include "results/results.hpp"

namespace attngate {

/// Check "instructions": ratio = instructions / baseline. Above 1 + threshold_pct/100:
/// fail (status "regression"); below 1 - threshold: pass ("improvement"); else pass
/// ("ok"). Without a baseline: a skip saying why (`baseline_note`), or with `strict` a
/// failure.
CheckResult instructions_check(double instructions, std::optional<double> baseline, double threshold_pct,
                               const std::string &machine_class, const std::string &baseline_note, bool strict = false);

}  // namespace attngate
