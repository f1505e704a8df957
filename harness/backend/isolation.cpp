// fork/pipe/poll plumbing for isolated kernel runs.
#include "backend/isolation.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/observe.hpp"
#include "io/error.hpp"
#include "io/guard.hpp"
#include "io/process.hpp"

namespace attngate {

namespace {

constexpr size_t kStderrKeep = 16 * 1024;
constexpr int kStderrLines = 12;

/// A pipe whose ends close themselves.
struct Pipe {
    int fd[2] = {-1, -1};
    Pipe() { ATTNGATE_CHECK(::pipe2(fd, O_CLOEXEC) == 0); }
    ~Pipe() {
        close_end(0);
        close_end(1);
    }
    void close_end(int i) {
        if (fd[i] >= 0) ::close(fd[i]);
        fd[i] = -1;
    }
};

void write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes.remove_prefix(static_cast<size_t>(n));
    }
}

std::string last_lines(const std::string &text, int lines) {
    size_t pos = text.size();
    if (pos && text[pos - 1] == '\n') --pos;
    for (int i = 0; i < lines && pos != std::string::npos && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
    return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

std::string signal_name(int sig) {
    const char *abbrev = ::sigabbrev_np(sig);
    return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

[[noreturn]] void run_child(Pipe &result, Pipe &err, const std::function<std::string(const StepFn &)> &work, const StepFn &step,
                           pid_t parent) {
    // Below a guard, so that whatever the kernel starts (in any session or group) is killed
    // when it ends, and with the harness even when the harness gets SIGKILL.
    become_guard(parent);
    // A crash must end the child with its signal, whatever handlers the parent installed.
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_DFL);
    ::dup2(err.fd[1], STDERR_FILENO);
    ::dup2(err.fd[1], STDOUT_FILENO);  // a kernel's prints must not interleave with the report
    write_all(result.fd[1], work(step));
    ::_exit(0);
}

/// The steps a child sends: (done, total) records, decoded as whole ones arrive.
struct StepRecords {
    using Record = std::array<uint64_t, 2>;
    std::string pending;
    void received(std::string_view bytes, const StepFn &on_step) {
        pending.append(bytes);
        size_t at = 0;
        for (; pending.size() - at >= sizeof(Record); at += sizeof(Record)) {
            Record r;
            std::memcpy(r.data(), pending.data() + at, sizeof r);
            on_step(static_cast<size_t>(r[0]), static_cast<size_t>(r[1]));
        }
        pending.erase(0, at);
    }
};

/// What the parent reads of a child until it has ended (and its pipes are drained) or its
/// time is up: the bytes of its result, the tail of its stderr; its steps go to on_step.
struct ChildReads {
    std::string payload, stderr_text;
    bool timed_out = false;
};

/// fd: the read ends of the child's result, stderr and steps pipes (-1: not read). The time
/// spent in on_step (printing progress to a terminal the user paused) and the time the
/// harness was stopped (Ctrl-Z) do not count against timeout_s.
ChildReads read_child(pid_t pid, const std::array<int, 3> &fd, const StepFn &on_step, WatchedClock &clock, double timeout_s) {
    ChildReads r;
    StepRecords records;
    std::chrono::steady_clock::duration telling{};  // in on_step: a blocked stderr must not count as the child's time
    bool exited = false;
    pollfd fds[3] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}, {fd[2], POLLIN, 0}};
    int open_fds = static_cast<int>(std::count_if(fd.begin(), fd.end(), [](int f) { return f >= 0; }));
    char buf[65536];
    while (open_fds > 0) {
        const double elapsed = clock.seconds() - std::chrono::duration<double>(telling).count();
        if (elapsed >= timeout_s) {
            r.timed_out = true;
            break;
        }
        // Once the child has exited, only what is already in the pipes is read: a process the
        // kernel forked may hold them open, and is not waited for.
        const int wait_ms = exited ? 0 : std::min(100, static_cast<int>(std::max(0.0, timeout_s - elapsed) * 1000) + 1);
        const int ready = ::poll(fds, 3, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0 && exited) break;
        for (int i = 0; i < 3; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                if (i == 2) {
                    const auto before = std::chrono::steady_clock::now();
                    records.received(std::string_view(buf, static_cast<size_t>(n)), on_step);
                    telling += std::chrono::steady_clock::now() - before;
                    continue;
                }
                (i == 0 ? r.payload : r.stderr_text).append(buf, static_cast<size_t>(n));
                if (r.stderr_text.size() > 2 * kStderrKeep) r.stderr_text.erase(0, r.stderr_text.size() - kStderrKeep);
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                --open_fds;
            }
        }
        siginfo_t info{};
        // WNOWAIT: the child stays a zombie, so its process group id cannot be reused before the kill below.
        if (!exited && ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
            exited = true;
    }
    return r;
}

/// A StepFn for the child that writes each step to fd (the steps pipe's write end).
StepFn step_writer(int fd) {
    ATTNGATE_CHECK(::fcntl(fd, F_SETFL, O_NONBLOCK) == 0);  // the child's timing never waits on its progress
    return [fd](size_t done, size_t total) {
        const StepRecords::Record r{done, total};
        [[maybe_unused]] const ssize_t n = ::write(fd, r.data(), sizeof r);  // atomic (< PIPE_BUF), or dropped
    };
}

}  // namespace

std::expected<std::string, CrashInfo> run_isolated(const std::function<std::string()> &work, double timeout_s) {
    return run_isolated([&work](const StepFn &) { return work(); }, timeout_s, {});
}

std::expected<std::string, CrashInfo> run_isolated(const std::function<std::string(const StepFn &)> &work, double timeout_s,
                                                   const StepFn &on_step) {
    Pipe result, err, steps;
    const StepFn step = on_step ? step_writer(steps.fd[1]) : StepFn{};
    std::fflush(stdout);
    std::fflush(stderr);
    WatchedClock clock;
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    ATTNGATE_CHECK(pid >= 0);
    if (pid == 0) run_child(result, err, work, step, parent);
    ::setpgid(pid, pid);  // also here: no window in which a signal finds the group missing
    kill_group_on_termination(pid);
    result.close_end(1);
    err.close_end(1);
    steps.close_end(1);
    if (!on_step) steps.close_end(0);

    ChildReads reads = read_child(pid, {result.fd[0], err.fd[0], steps.fd[0]}, on_step, clock, timeout_s);
    end_guarded(pid);  // the child on a timeout, and whatever it started in every case
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    forget_group_on_termination(pid);
    const double seconds = clock.seconds();

    CrashInfo crash;
    crash.seconds = seconds;
    crash.stderr_tail = last_lines(reads.stderr_text, kStderrLines);
    if (reads.timed_out) {
        crash.kind = "timeout";
        crash.seconds = timeout_s;
    } else if (WIFSIGNALED(status)) {
        crash.kind = "crash";
        crash.signal = signal_name(WTERMSIG(status));
    } else if (WEXITSTATUS(status) != 0) {
        crash.kind = "exit";
        crash.exit_code = WEXITSTATUS(status);
    } else {
        return std::move(reads.payload);
    }
    return std::unexpected(std::move(crash));
}

CrashInfo incomplete_result(double seconds) {
    CrashInfo c;
    c.kind = "crash";
    c.signal = "incomplete result";  // died or was cut off while writing
    c.seconds = seconds;
    return c;
}

Observation observe_isolated(const std::function<Observation()> &work, double timeout_s) {
    const auto t0 = std::chrono::steady_clock::now();
    auto bytes = run_isolated([&] { return serialize_observation(work()); }, timeout_s);
    Observation failed;
    if (!bytes) {
        failed.crash = std::move(bytes.error());
        return failed;
    }
    if (auto o = parse_observation(*bytes)) return std::move(*o);
    failed.crash = incomplete_result(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return failed;
}

}  // namespace attngate
