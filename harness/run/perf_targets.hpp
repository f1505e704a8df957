// The case x kernels a perf phase times, and timing them through their backends: shared
// by the run's perf phase, `attngate time` and the A/B timing server.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"

namespace attngate {

/// One case x kernel to time, with the index of its row in the run's results.
struct PerfTarget {
    size_t result_index;
    const CaseSpec *spec;
    const PlannedKernel *kernel;
    Invocation inv;
    std::string label() const { return kernel->spec.label(); }
};

/// A case x kernel the perf phase times: the suite's perf.kernels pick the kernel, and a
/// case kept for correctness coverage only ("timed": false) is not timed at all.
bool perf_selected(const Suite &suite, const CaseSpec &c, const std::string &label);

/// Times the targets through their backends: each backend gets its own targets at once
/// (the in-process one interleaves them in one child). One outcome per target;
/// req.on_progress counts repetitions over all of them.
std::vector<TimingOutcome> time_targets(const std::vector<PerfTarget> &targets, Backends &backends, const TimingRequest &req);

}  // namespace attngate
