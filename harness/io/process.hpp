// Child processes the harness starts and waits for (an A/B side's build, valgrind for
// instruction counts), and the temporary directory they write into.
#pragma once

#include <filesystem>

#include <sys/types.h>
#include <string>
#include <vector>

#include "io/error.hpp"

namespace attngate {

/// A temporary directory (/tmp/attngate-<what>-XXXXXX) removed with its contents on scope exit.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string &what = "ab");
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
};

/// Until called again with 0, SIGTERM, SIGINT or SIGHUP to the harness first kills process
/// group `pgid` (a child and whatever it started), then ends the harness with that signal.
/// One group at a time: the harness runs its children one after another.
void kill_group_on_termination(pid_t pgid);

/// Runs argv (no shell, PATH searched) in its own process group, with stdout discarded and
/// stderr kept in err_path, within timeout_s (then the group is killed); the group also
/// dies when the harness is killed or interrupted. `what` names it in errors, which carry
/// the end of its stderr. extra_env: NAME=value entries added to its environment.
Result<void> spawn(const std::vector<std::string> &argv, const std::filesystem::path &err_path, double timeout_s,
                   const std::string &what, const std::vector<std::string> &extra_env = {});

/// The executable file `name` resolves to on PATH (or itself when it holds a '/'), or
/// empty when there is none.
std::filesystem::path find_on_path(const std::string &name);

}  // namespace attngate
