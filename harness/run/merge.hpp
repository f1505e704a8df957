// Putting a sharded run back together: the shards' results become one results file in
// the whole plan's order, after checking they belong together (same suite, seed, plan and
// fingerprint, every shard present once, every planned unit run by exactly one), and the
// run-wide decisions are made again over the union: Benjamini-Hochberg over every perf
// comparison of the whole run. (Workload projections are redone by the caller with the
// store's pricing: add_workloads.)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "results/results.hpp"

namespace attngate {

struct MergeOptions {
    bool force = false;  ///< merge shards of different suites' seeds or fingerprints anyway
};

/// Shards with the file each came from (named in errors). A missing shard, a duplicate, a
/// unit run twice or never, a shard that did not finish, a planned unit without a row or a
/// row given twice is bad input naming it; a different suite is bad input; a
/// different seed, plan or fingerprint is bad input unless options.force. A shard that planned
/// nothing because its kernel sources did not load merges: its load errors fail the result.
Result<RunResults> merge_shards(std::vector<std::pair<std::string, RunResults>> shards, const MergeOptions &options);

/// Decides every perf check that compared against a baseline (or paired A/B samples)
/// again from its samples, then applies Benjamini-Hochberg over all of them at `alpha`.
/// Returns how many comparisons took part.
size_t redecide_perf(RunResults &results, double alpha);

}  // namespace attngate
