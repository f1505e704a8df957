// The plan: which kernel runs which case, resolved against the registry before anything
// runs, so an unknown kernel is a bad suite (exit 2) and not a half-finished run.
#pragma once

#include <vector>

#include "kernel_registry.hpp"
#include "suite.hpp"

namespace attngate {

struct PlannedKernel {
    const KernelSpec *spec;
    const attngate_kernel *kernel;
};

struct PlannedCase {
    const CaseSpec *spec;
    std::vector<PlannedKernel> kernels;
};

struct PlanFilter {
    std::vector<std::string> kernels;  ///< labels or names; empty: all
    std::vector<std::string> cases;    ///< ids; empty: all
};

Result<std::vector<PlannedCase>> make_plan(const Suite &suite, const KernelRegistry &registry,
                                           const PlanFilter &filter = {});


}  // namespace attngate
