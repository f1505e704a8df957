// The compile check: a kernel's first-call (trace + compile) time against its baseline.
// JAX and Pallas kernels compile on their first call per shape; a dependency bump that
// doubles that time is drift even when the steady state did not move.
#pragma once

#include <optional>

#include "results/results.hpp"

namespace attngate {

/// current_s: this run's first-call time; baseline_s: the accepted one (nullopt: none yet).
/// Fails when current > baseline x (1 + threshold_pct / 100) and by more than min_delta_s
/// (so a 30 ms compile that becomes 50 ms is not an alarm).
CheckResult compile_check(double current_s, std::optional<double> baseline_s, double threshold_pct, double min_delta_s = 0.25);

}  // namespace attngate
