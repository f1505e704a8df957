// Paired A/B timing of two attngate builds on the same machine: rounds of
// `<build> time` alternate A B / B A over the same cases, so machine drift hits both
// sides alike, and each case x kernel is judged with the paired decision rule.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stats/perf_decision.hpp"
#include "results/results.hpp"
#include "plan/suite.hpp"

namespace attngate {

struct AbOptions {
    std::string a, b;  ///< an attngate binary, a build directory holding one, or a command line
    std::vector<std::string> time_args;  ///< passed to `time` on both sides (suite, plugins, filters)
    int rounds = 21;
    int samples_per_round = 3;  ///< each side's time in a round is the median of this many
    double min_time_s = 0.02;
    DecisionPolicy policy;
    double timeout_s = 600.0;  ///< per invocation
    bool strict = false;       ///< a case the rule cannot gate (too noisy) fails
};

/// The command line that runs one side: a directory becomes DIR/attngate.
std::string ab_command(const std::string &side);

/// Runs the rounds and returns results with one perf check per case x kernel (B against A).
Result<RunResults> run_ab(const Suite &suite, const AbOptions &options,
                          const std::function<void(int round, int rounds)> &progress);

}  // namespace attngate
