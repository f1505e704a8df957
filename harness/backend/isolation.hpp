// Crash and hang isolation: a kernel call runs in a forked child with a time limit, and
// its observation comes back over a pipe. A child that crashes, hangs, or dies half-way
// through writing becomes a CrashInfo, never a result.
#pragma once

#include <expected>
#include <functional>
#include <string>

#include "backend/observation.hpp"

namespace attngate {

/// Runs work() in a child process and returns the bytes it produced, or how the child
/// ended when it did not finish (crash, hang past timeout_s, non-zero exit).
std::expected<std::string, CrashInfo> run_isolated(const std::function<std::string()> &work, double timeout_s);

/// The CrashInfo for a child that finished but whose bytes do not parse.
CrashInfo incomplete_result(double seconds);

/// Runs work() in a child process; kills it after timeout_s seconds.
Observation observe_isolated(const std::function<Observation()> &work, double timeout_s);

}  // namespace attngate
