// What the CLI prints: text for people (silenced by --quiet), data that --json asks for
// (printed even then), the progress of long commands and errors on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace attngate::cli {

/// At the start of main: a closed stdin, stdout or stderr is opened on /dev/null (stdout
/// read-only, so that a write to it fails and is reported), so that no file attngate opens
/// becomes fd 2 and receives its messages; SIGPIPE is ignored, so that a reader gone from a
/// pipe is a failed write, not the end of the run (children exec'd start with it as usual).
void prepare_standard_streams();

/// Writes to stderr, best effort: a closed, full or broken stderr changes nothing the command
/// does, so progress never decides the verdict. Never throws.
void write_stderr(std::string_view text);

/// Writes to stdout. Never throws: the first failed write is kept for with_stdout_checked.
void write_stdout(std::string_view text);

/// main's exit code once stdout is flushed: `rc`, or, when a write to stdout failed other than
/// for a reader that went away (EPIPE, `| head`), an error said on stderr and exit 3 in place
/// of a pass.
int with_stdout_checked(int rc);

template <typename... Args>
void print_stderr(fmt::format_string<Args...> format, Args &&...args) {
    write_stderr(fmt::format(format, std::forward<Args>(args)...));
}

struct ConsoleOptions {
    bool quiet = false;              ///< --quiet: nothing on stdout but --json data, no progress
    double progress_every_s = 10.0;  ///< --progress-every: plain progress lines at most this often (0: every step)
};

class Console {
public:
    ConsoleOptions options;

    /// Text for people on stdout; nothing with --quiet.
    template <typename... Args>
    void say(fmt::format_string<Args...> format, Args &&...args) const {
        if (options.quiet) return;
        write_stdout(fmt::format(format, std::forward<Args>(args)...));
    }
    /// What the user asked for by name (--json): on stdout even with --quiet.
    void data(std::string_view text) const;
};

/// Adds -q/--quiet; main adds it to every subcommand.
void add_quiet_option(CLI::App *cmd, Console &console);

/// Adds --progress-every to a long-running subcommand (run, ab).
void add_progress_option(CLI::App *cmd, Console &console);

/// "4.2s", "3m 05s", "1h 02m": a duration for a progress line.
std::string duration_said(double seconds);

/// The progress of a long command on stderr. On a terminal, one live line redrawn at each
/// step; otherwise (a CI log) a plain line at the first step, then at most every
/// progress_every_s, and at the last: done of total, elapsed, an estimate of the time left.
/// Nothing with --quiet.
class Progress {
public:
    /// `what` names the command ("run smoke"), `unit` what is counted ("case x kernels").
    Progress(const Console &console, std::string what, std::string unit);
    ~Progress() { finish(); }
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;

    /// `done` of `total` units; `detail` (the row just done, the round) is shown after them.
    void update(size_t done, size_t total, std::string_view detail = "");
    /// Erases the live line, so that a line printed on stdout does not land inside it.
    void clear();
    /// Ends the live line, once (its last state stays on screen).
    void finish();
    /// Whether the progress is a live line on a terminal.
    bool live() const { return live_; }

private:
    std::string line(size_t done, size_t total, std::string_view detail) const;
    const Console &console_;
    std::string what_, unit_;
    bool live_ = false, drawn_ = false, printed_ = false;
    std::tuple<size_t, size_t, std::string> shown_{SIZE_MAX, 0, ""};  ///< the last step shown: done, total, detail
    std::chrono::steady_clock::time_point start_, last_line_;
};

}  // namespace attngate::cli
