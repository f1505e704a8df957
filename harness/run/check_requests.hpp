// Which checks `run --checks` takes, and what it says of a name it does not take: the
// checks that come with another (numerics and contract with golden, compile with perf) are
// named with the one that brings them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/json_describe.hpp"
#include "results/check_metrics.hpp"

namespace attngate {

/// The checks --checks may name (the others come with them: not_requestable says which).
const std::vector<CheckName> &requestable_checks();

/// Why `name` is not a --checks value: "unknown check ..." naming the known ones, or for a check
/// that runs with another (numerics, contract, program, compile, instructions), which one brings
/// it. Empty for a requestable check.
std::string not_requestable(std::string_view name);

/// Why these --checks do not go together (cost without perf: cost prices perf's timings and
/// fails when they regress, so it would gate throughput unasked); empty when they do.
std::string checks_apart(const std::vector<std::string> &names);

}  // namespace attngate
