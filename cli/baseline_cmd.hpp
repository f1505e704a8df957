// `attngate baseline update`: review and accept new baselines on a developer's machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "results/results.hpp"

namespace attngate::cli {

struct BaselineUpdateArgs {
    std::string results_path = "reports/results.json";
    StoreArgs store;
    std::vector<std::string> checks;  ///< empty: every check with baselines found in the results
    std::string only;
    std::string reason;
    std::string machine;
    bool yes = false, force = false, allow_in_ci = false;
};

/// Runs the update flow on `results`; returns the exit code. Prompts on a terminal.
int baseline_update(const BaselineUpdateArgs &args, const RunResults &results);

}  // namespace attngate::cli
