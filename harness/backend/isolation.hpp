// Crash and hang isolation: a kernel call runs in a forked child with a time limit, and
// its observation (and any progress steps it tells on the way) comes back over a pipe. A
// child that crashes, hangs, or dies half-way through writing becomes a CrashInfo, never a
// result.
#pragma once

#include <expected>
#include <functional>
#include <string>

#include "backend/observation.hpp"

namespace attngate {

/// Runs work() in a child process and returns the bytes it produced, or how the child
/// ended when it did not finish (crash, hang past timeout_s, non-zero exit).
std::expected<std::string, CrashInfo> run_isolated(const std::function<std::string()> &work, double timeout_s);

/// A step of a long piece of work: done of total.
using StepFn = std::function<void(size_t done, size_t total)>;

/// run_isolated, with the child's progress: each call of the StepFn that work() gets, in
/// the child, reaches on_step here, in this process, while the child runs (over a pipe the
/// child never waits on: a step that finds it full is dropped). Without on_step, work() gets
/// an empty StepFn.
std::expected<std::string, CrashInfo> run_isolated(const std::function<std::string(const StepFn &)> &work, double timeout_s,
                                                   const StepFn &on_step);

/// The CrashInfo for a child that finished but whose bytes do not parse.
CrashInfo incomplete_result(double seconds);

/// Runs work() in a child process; kills it after timeout_s seconds.
Observation observe_isolated(const std::function<Observation()> &work, double timeout_s);

}  // namespace attngate
