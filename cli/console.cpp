// The console: the standard streams, --quiet, --progress-every, and progress lines.
#include "console.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>

#include "io/error.hpp"
#include "options.hpp"
#include "report/escape.hpp"

namespace attngate::cli {

void prepare_standard_streams() {
    for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
        if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            // In this order the closed one is the lowest free descriptor, the one open() takes.
            [[maybe_unused]] const int opened = ::open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY);
        }
    std::signal(SIGPIPE, SIG_IGN);
}

namespace {
int g_stdout_errno = 0;  ///< of the first write to stdout that failed
}  // namespace

void write_stdout(std::string_view text) {
    if ((std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) && !g_stdout_errno)
        g_stdout_errno = errno;
}

int with_stdout_checked(int rc) {
    if (std::fflush(stdout) != 0 && !g_stdout_errno) g_stdout_errno = errno;
    if (!g_stdout_errno && !std::ferror(stdout)) return rc;
    if (g_stdout_errno == EPIPE) return rc;  // the reader stopped reading: its choice, not a failure
    print_stderr("error: cannot write to stdout: {}\n", g_stdout_errno ? std::strerror(g_stdout_errno) : "a write failed");
    return rc == kExitPass ? kExitInfra : rc;
}

void write_stderr(std::string_view text) {
    [[maybe_unused]] const size_t n = std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
    std::clearerr(stderr);  // the next line is tried again
}

void Console::data(std::string_view text) const { write_stdout(text); }

void add_quiet_option(CLI::App *cmd, Console &console) {
    cmd->add_flag("-q,--quiet", console.options.quiet,
                  "print nothing on stdout but what --json asks for, and no progress (errors still go to stderr; the exit code "
                  "is the answer)");
}

void add_progress_option(CLI::App *cmd, Console &console) {
    cmd->add_option("--progress-every", console.options.progress_every_s,
                    "when stderr is not a terminal (a CI log): a progress line at most every this many seconds (0: after every "
                    "step); on a terminal the progress is one live line")
        ->check(finite_number(0, 86400, true))
        ->capture_default_str();
}

std::string duration_said(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    if (s < 60) return fmt::format("{:.1f}s", s);
    const auto whole = static_cast<long long>(std::llround(s));
    if (whole < 3600) return fmt::format("{}m {:02}s", whole / 60, whole % 60);
    return fmt::format("{}h {:02}m", whole / 3600, whole / 60 % 60);
}

Progress::Progress(const Console &console, std::string what, std::string unit)
    : console_(console), what_(std::move(what)), unit_(std::move(unit)), live_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_line_(start_) {}

std::string Progress::line(size_t done, size_t total, std::string_view detail) const {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
    // The rate of the first steps (a run's first row also loads and warms up) is no guide:
    // an estimate waits for a twentieth of them, and two at least.
    const bool known = done >= total || (done >= 2 && 20 * done >= total);
    const std::string left = !known ? "time left unknown"
                                    : fmt::format("about {} left", duration_said(elapsed * static_cast<double>(total - std::min(done, total)) /
                                                                                 static_cast<double>(done)));
    return fmt::format("{}: {} of {} {} ({:.0f}%) · elapsed {} · {}{}{}", what_, done, total, unit_, pct, duration_said(elapsed), left,
                       detail.empty() ? "" : " · ", terminal_text(std::string(detail)));
}

void Progress::update(size_t done, size_t total, std::string_view detail) {
    if (console_.options.quiet) return;
    // A step told twice (a host's last repetition, then the caller's count of the set) is shown once.
    auto step = std::tuple{done, total, std::string(detail)};
    if (step == shown_) return;
    shown_ = std::move(step);
    if (live_) {
        // Within the terminal's width: a wrapped line leaves its first rows behind at every \r.
        std::string text = line(done, total, detail);
        if (winsize ws{}; ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) text = fit_columns(text, ws.ws_col - 1);
        write_stderr(fmt::format("\r\x1b[K{}", text));
        drawn_ = true;
    } else {
        const auto now = std::chrono::steady_clock::now();
        const bool due = std::chrono::duration<double>(now - last_line_).count() >= console_.options.progress_every_s;
        if (!due && done < total && printed_) return;  // the first line says the step has begun
        write_stderr(fmt::format("progress: {}\n", line(done, total, detail)));
        last_line_ = now;
        printed_ = true;
    }
}

void Progress::clear() {
    if (!drawn_) return;
    write_stderr("\r\x1b[K");
    drawn_ = false;
}

void Progress::finish() {
    if (!drawn_) return;
    write_stderr("\n");
    drawn_ = false;
}

}  // namespace attngate::cli
