// Child processes the harness starts and waits for (an A/B side's build, valgrind for
// instruction counts), and the temporary directory they write into.
#pragma once

#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>

#include <sys/types.h>
#include <string>
#include <vector>

#include "io/error.hpp"

namespace attngate {

/// t in UTC, ISO 8601 to the second (2026-12-05T14:01:08Z): the time every record of a run carries.
std::string utc_timestamp(std::time_t t = std::time(nullptr));

/// A temporary directory ($TMPDIR, else /tmp: attngate-<what>-XXXXXX) removed with its
/// contents on scope exit, and by SIGTERM, SIGINT or SIGHUP to the harness (see
/// kill_group_on_termination). made() says why there is none (a $TMPDIR that is not there).
struct TempDir {
    std::filesystem::path path;  ///< empty when it could not be made
    explicit TempDir(const std::string &what = "ab");
    ~TempDir();
    Result<void> made() const;
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

private:
    std::string problem_;
};

/// Until forget_group_on_termination(pgid), SIGTERM, SIGINT or SIGHUP to the harness first
/// kills process group `pgid` (a child and whatever it started), waits a few seconds at most
/// for it to end, removes the TempDirs alive, then ends the harness with that signal. Up to 8 groups at once (two resident A/B sides and a timed child).
void kill_group_on_termination(pid_t pgid);
void forget_group_on_termination(pid_t pgid);

/// Seconds since it was made, less the stretches this process spent stopped (Ctrl-Z, SIGSTOP):
/// a child in its own process group runs on while the harness is stopped, and a time limit
/// counts only time in which the harness watched it. Read it at every turn of a wait loop: a
/// stop is the gap since the last read across which SIGCONT came (its handler, installed
/// once, only counts; children forked below a guard start without it).
class WatchedClock {
public:
    WatchedClock();
    double seconds();

private:
    std::chrono::steady_clock::time_point start_, last_;
    std::chrono::steady_clock::duration stopped_{};
    long continued_ = 0;
};

/// Runs argv (no shell, PATH searched) in its own process group, with stdout discarded (or
/// written to out_path) and stderr kept in err_path, within timeout_s (then the group is
/// killed); the group also dies when the harness is killed or interrupted. `what` names it
/// in errors, which carry the end of its stderr. extra_env: NAME=value entries added to its
/// environment.
Result<void> spawn(const std::vector<std::string> &argv, const std::filesystem::path &err_path, double timeout_s,
                   const std::string &what, const std::vector<std::string> &extra_env = {},
                   const std::filesystem::path &out_path = {});

/// A child kept running to answer requests: a line to it on its stdin, a line back on its
/// stdout (one socket, so a write to a child that died is an error, never SIGPIPE). It runs
/// in its own process group, dies with the harness, and its stderr is kept in err_path.
class Coprocess {
public:
    static Result<std::unique_ptr<Coprocess>> start(const std::vector<std::string> &argv, const std::filesystem::path &err_path,
                                                    const std::string &what);
    /// Closes its stdin, gives it a moment to exit on its own, then kills its group.
    ~Coprocess();
    Coprocess(const Coprocess &) = delete;
    Coprocess &operator=(const Coprocess &) = delete;

    /// The next line it writes, without the newline, within timeout_s. An Infra error, with
    /// the end of its stderr, when it ends or stays silent first (then its group is killed).
    Result<std::string> read_line(double timeout_s);
    /// Writes line and a newline, then reads the answer line.
    Result<std::string> request(const std::string &line, double timeout_s);
    /// The end of what it wrote to stderr.
    std::string stderr_tail() const;

private:
    Coprocess() = default;
    Error failed(const std::string &why);
    void end();

    std::string what_;
    std::filesystem::path err_path_;
    int fd_ = -1;
    pid_t pid_ = -1;
    std::string buffer_;
};

/// The executable file `name` resolves to on PATH (or itself when it holds a '/'), or
/// empty when there is none.
std::filesystem::path find_on_path(const std::string &name);

/// A command line split into words like a POSIX shell would (quotes and backslashes,
/// no expansion), so a path with spaces survives when quoted; an error for an
/// unterminated quote.
Result<std::vector<std::string>> split_command(const std::string &line);

/// The directory attngate started in, read on the first call (main makes it, before any
/// kernel runs): children start there, whatever a kernel in this process (--no-isolation)
/// did with chdir(), so that relative paths on their command lines mean what they meant.
const std::filesystem::path &start_directory();

}  // namespace attngate
