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

/// Of the fingerprints the baselines this run uses were made with (the provenance of the
/// planned case x kernels' entries in `files`, the numerics and memory baselines the run
/// loaded, null: not used; when `perf_machine_class` is given, that class's perf baselines;
/// and the goldens'), the one `now`'s dependencies moved least from, the last accepted among
/// equals: baselines recorded on several machines (numerics on one per path) then show a
/// bump against the nearest, not every other machine's libraries. {} when none is known.
Result<json::object> baselines_fingerprint(Store &store, const Suite &suite, const Plan &plan, std::vector<const BaselineFile *> files,
                                           const std::optional<std::string> &perf_machine_class, const json::object &now);

}  // namespace attngate
