// Crash and hang isolation: a kernel call runs in a forked child with a time limit, and
// its observation comes back over a pipe. A child that crashes, hangs, or dies half-way
// through writing becomes a CrashInfo, never a result.
#pragma once

#include <functional>

#include "observe.hpp"

namespace attngate {

/// Runs work() in a child process; kills it after timeout_s seconds.
Observation observe_isolated(const std::function<Observation()> &work, double timeout_s);

}  // namespace attngate
