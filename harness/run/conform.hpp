// `attngate conform`: every selected kernel of the run's backends (built-in, plugin or
// adapter alike) on the conformance check's probe cases, judged by checks/conformance.
// Produces data only; the CLI prints it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "checks/conformance.hpp"
#include "results/conformance_result.hpp"

namespace attngate {

struct ConformOptions {
    std::vector<std::string> kernels;  ///< names; empty: every kernel of every backend
    bool isolation = true;             ///< in-process kernels in a forked child
    double timeout_s = 300.0;          ///< per probe case
};

/// Called after each probe case of a kernel.
using ConformProgress = std::function<void(const KernelConformance &, const ProbeOutcome &)>;

/// Runs the probes; an unknown --kernel name is a usage error.
Result<ConformanceReport> run_conformance(Backends &backends, const ConformOptions &options, const ConformProgress &progress = {});

}  // namespace attngate
