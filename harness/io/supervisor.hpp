// A run whose kernels share attngate's process (--no-isolation), inside a supervised child:
// a kernel that calls exit(0), _exit() or abort(), or faults (a thread writing its output
// after run() returned), ends only that child, and the supervisor turns that end into an
// exit code of the contract. Such a run never ends with exit 0, nor with a signal.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace attngate {

struct SupervisedEnd {
    int exit_code = 0;        ///< what body returned; meaningless when ended_early is set
    std::string ended_early;  ///< empty when body returned; else "exited with code 0 while running flash on case c1"
};

/// Runs body() in a forked child (sharing stdout, stderr and the process group) and waits
/// for it; SIGTERM, SIGINT and SIGHUP are passed on to it, and this process then ends with
/// that signal like an unsupervised run. Under a debugger (TracerPid set) body() runs here,
/// so that the debugger sees the kernels.
SupervisedEnd run_supervised(const std::function<int()> &body);

/// What the supervised child is doing now ("flash on case c1"), said when it ends early.
/// A no-op outside run_supervised.
void note_activity(std::string_view what);

}  // namespace attngate
