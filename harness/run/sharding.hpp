// Which part of a plan this shard runs: each planned case x kernel (or, for A/B, each
// case) weighted by its expected time — from the perf baselines' medians when the store
// has them for this machine class, else from its FLOPs at the baselines' (or a nominal)
// rate — and partitioned with balanced_partition. Every shard computes the same
// partition from the same suite and store; the shard's results record the whole plan so
// that `merge` can name anything missing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/json_io.hpp"
#include "plan/plan.hpp"
#include "plan/shard.hpp"
#include "results/check_metrics.hpp"
#include "store/store.hpp"

namespace attngate {

enum class ShardUnit { Run, Case };  ///< "case/kernel" (run) or "case" (ab: both sides time whole cases)

/// Expected seconds of each planned run (plan order) for these checks; `perf_median_s`
/// maps "case/kernel" to a baseline median time per call.
std::vector<double> expected_run_seconds(const Suite &suite, const Plan &plan, const std::vector<CheckName> &checks,
                                         const std::map<std::string, double> &perf_median_s);

/// results.shard of a shard that planned nothing (its kernel sources did not load): index,
/// count and unit, without a plan; `merge` fails on its load errors.
json::object unplanned_shard(const ShardSpec &shard, ShardUnit unit);

/// Removes every run of `plan` that is not this shard's and returns the shard's
/// description for results.shard: index, count, unit, the whole plan's labels, this
/// shard's, what balanced it, the suite's seed and perf alpha.
Result<json::object> shard_plan(Plan &plan, const Suite &suite, const ShardSpec &shard, ShardUnit unit, Store &store,
                                const std::string &machine_class, const std::vector<CheckName> &checks, double alpha);

}  // namespace attngate
