// A run whose kernel sources did not all load: it fails before any kernel runs, and its
// results say why.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "io/error.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"
#include "run/run.hpp"

namespace attngate {

/// Results with no rows that fail on `errors` (kernel sources that did not load): the suite,
/// tool, start time and errors, complete. `ab` writes them when a side did not load.
RunResults unloaded_results(const Suite &suite, std::vector<std::string> errors);

/// The results of a run that did not start because kernel sources did not load (`errors`,
/// Backends::load_errors()): no rows, the errors, the fingerprint of what did load (lock
/// files included, so "what changed" can be read), complete; written to options.results_path.
/// What a failed source serves is missing from the plan, and a run of the rest could pass.
Result<RunResults> unloaded_results(const Suite &suite, const RunOptions &options, std::vector<CheckName> checks,
                                    const Backends &backends, std::vector<std::string> errors);

}  // namespace attngate
