// The plan: which kernel runs which case, resolved against the kernels every backend
// offers before anything runs, so an unknown kernel is a bad suite (exit 2) and not a
// half-finished run. Kernels from plugins and adapters join the suite's own: the
// `run --plugin`/`--adapter` (docs/run.md) gates them on every case they support.
#pragma once

#include <memory>
#include <vector>

#include "plan/kernel_info.hpp"
#include "plan/suite.hpp"

namespace attngate {

struct PlannedKernel {
    KernelSpec spec;                   ///< the suite's entry, or one made for an extra kernel
    const KernelInfo *info = nullptr;  ///< what its backend said about it
    bool from_suite = true;            ///< false: joined from a plugin or adapter
};

struct PlannedCase {
    const CaseSpec *spec = nullptr;
    std::vector<const PlannedKernel *> kernels;
};

struct PlanFilter {
    std::vector<std::string> kernels;  ///< labels or names; empty: all
    std::vector<std::string> cases;    ///< ids; empty: all
};

struct Plan {
    std::vector<std::unique_ptr<PlannedKernel>> kernels;
    std::vector<PlannedCase> cases;

    /// case x kernel runs in the plan.
    size_t runs() const;
};

/// Whether a kernel the suite lists, or the filter names (a label by its kernel), is none of
/// `available`: with a kernel source that did not load, it may be what that source serves.
bool names_a_missing_kernel(const Suite &suite, const std::vector<const KernelInfo *> &available, const PlanFilter &filter);

/// Resolves the suite's kernels against `available` (every backend's kernels, in order)
/// and adds every kernel of each origin in `extra_origins` (plugins, adapters) that the
/// suite does not mention at all. The filter may name any of them.
Result<Plan> make_plan(const Suite &suite, const std::vector<const KernelInfo *> &available,
                       const std::vector<std::string> &extra_origins, const PlanFilter &filter = {});

}  // namespace attngate
