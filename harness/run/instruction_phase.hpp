// The perf phase of `--perf-metric instructions`: one call of each in-process case x kernel
// counted under callgrind in one child (backend/instruction_count.hpp), each against this
// machine class's instruction baseline (checks/instructions_check.hpp).
#pragma once

#include <vector>

#include "plan/suite.hpp"
#include "results/results.hpp"
#include "run/perf_phase.hpp"
#include "run/perf_targets.hpp"

namespace attngate {

/// Appends an instructions check (and a skipped cost check, when costs were asked for) to
/// each target's results row.
Result<void> instruction_phase(const Suite &suite, const std::vector<PerfTarget> &targets, Backends &backends, RunResults &results,
                               const PerfPhaseOptions &options);

}  // namespace attngate
