// The fingerprint a run's "What changed (since the baseline)" is compared with: the one the
// baselines the run actually uses were made with, a team's plugins and adapters included.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/json_io.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"
#include "store/baseline_store.hpp"
#include "store/store.hpp"

namespace attngate {

/// Of the planned case x kernels' entries in `files` (the numerics and memory baselines the
/// run loaded; null: not used) and, when `perf_machine_class` is given, in that machine
/// class's perf baselines, the fingerprint of the one accepted last (its provenance's: the
/// run `baseline update` accepted it from); without one, the goldens' (golden generate's);
/// {} when neither is known.
Result<json::object> baselines_fingerprint(Store &store, const Suite &suite, const Plan &plan, std::vector<const BaselineFile *> files,
                                           const std::optional<std::string> &perf_machine_class);

}  // namespace attngate
