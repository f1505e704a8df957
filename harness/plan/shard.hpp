// Sharding a plan across N runners: which shard this is ("--shard I/N", 1-based as
// GitLab's CI_NODE_INDEX), and a deterministic partition of weighted items that gives
// every shard about the same expected time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/error.hpp"

namespace attngate {

struct ShardSpec {
    int index = 1;  ///< 1..count
    int count = 1;
};

/// "I/N" with 1 <= I <= N; anything else is a usage error naming the text.
Result<ShardSpec> parse_shard(std::string_view text);

/// Longest-processing-time-first: items by cost descending (ties: earlier item first),
/// each to the shard with the least cost so far (ties: lowest shard). The same costs
/// always give the same partition, and no shard ends more than one item's cost above the
/// mean. Returns each item's shard, 0-based.
std::vector<int> balanced_partition(const std::vector<double> &costs, int shards);

}  // namespace attngate
