// Starting, watching and stopping an adapter child (below a guard, io/guard.hpp).
#include "backend/adapter_process.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/files.hpp"
#include "io/guard.hpp"
#include "io/process.hpp"

namespace attngate {

namespace {

constexpr std::string_view kListening = "ATTNGATE-ADAPTER LISTENING ";

/// The URL of a LISTENING line that `text` starts with, or empty (also while the line is still being written).
std::string listening_url(std::string_view text) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos || !text.starts_with(kListening)) return {};
    return std::string(text.substr(kListening.size(), end - kListening.size()));
}

/// Why the readiness line did not come, beyond how it ended: an adapter older than the
/// readiness descriptor prints it on stdout only, which the harness no longer believes.
std::string stdout_hint(const std::string &log) {
    if (!log.starts_with(kListening) && log.find(fmt::format("\n{}", kListening)) == std::string::npos) return {};
    return fmt::format(" (it printed \"{}\" on its output, which kernel code can write too: an adapter says it is "
                       "listening on the descriptor ${} names; see docs/protocol.md#transport)",
                       kListening.substr(0, kListening.size() - 1), kReadyFdEnv);
}

std::string describe_status(int status) {
    if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char *abbrev = ::sigabbrev_np(WTERMSIG(status));
        return abbrev ? fmt::format("killed by SIG{}", abbrev) : fmt::format("killed by signal {}", WTERMSIG(status));
    }
    return "ended";
}

}  // namespace

Result<std::unique_ptr<AdapterProcess>> AdapterProcess::start(const std::string &command, const std::string &token_env,
                                                              const std::string &token, double ready_timeout_s) {
    std::unique_ptr<AdapterProcess> p(new AdapterProcess);
    p->command_ = command;
    // In a TempDir: in $TMPDIR, and removed even when the harness is interrupted.
    p->log_dir_ = std::make_unique<TempDir>("adapter");
    if (auto m = p->log_dir_->made(); !m) return fail(ErrorKind::Infra, "--adapter: {}", m.error().message);
    p->log_path_ = (p->log_dir_->path / "adapter.log").string();
    const int log_fd = ::open(p->log_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (log_fd < 0) return fail(ErrorKind::Infra, "--adapter: cannot create {}: {}", p->log_path_, std::strerror(errno));
    const std::string script = "exec " + command + " --http 127.0.0.1:0";
    // The readiness line comes on a pipe of its own, not on stdout, which the adapter's kernels share.
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC | O_NONBLOCK) != 0) {
        ::close(log_fd);
        return fail(ErrorKind::Infra, "--adapter: cannot make a pipe: {}", std::strerror(errno));
    }
    const std::string ready_fd = std::to_string(ready[1]);
    const pid_t parent = ::getpid();
    const char *dir = start_directory().c_str();  // a restart after a kernel's chdir() too
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(log_fd);
        ::close(ready[0]);
        ::close(ready[1]);
        return fail(ErrorKind::Infra, "--adapter: cannot fork: {}", std::strerror(errno));
    }
    if (pid == 0) {
        // Below a guard: whatever the adapter starts, in any process group, ends with it, and
        // it never outlives the harness, even a SIGKILLed one.
        become_guard(parent);
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_DFL);
        const int devnull = ::open("/dev/null", O_RDONLY);
        ::dup2(devnull, STDIN_FILENO);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        if (*dir && ::chdir(dir) != 0) {
            std::fprintf(stderr, "cannot enter %s, where attngate started: %s\n", dir, std::strerror(errno));
            ::_exit(127);
        }
        if (!token_env.empty()) ::setenv(token_env.c_str(), token.c_str(), 1);
        ::fcntl(ready[1], F_SETFD, 0);  // the one descriptor the adapter inherits beyond 0-2 (and the log's)
        ::setenv(kReadyFdEnv, ready_fd.c_str(), 1);
        ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    ::close(log_fd);
    ::close(ready[1]);
    p->pid_ = pid;
    const struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } ready_in{ready[0]};
    std::string said;  // what came on the readiness pipe so far: only its first line counts
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        char buf[512];
        for (ssize_t got; said.size() < 4096 && (got = ::read(ready_in.fd, buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(got));
        if (std::string url = listening_url(said); !url.empty()) {
            p->url_ = std::move(url);
            return p;
        }
        if (said.find('\n') != std::string::npos)
            return fail(ErrorKind::Infra, "--adapter \"{}\": its readiness line is not \"{}URL\": {:?}", command, kListening,
                        said.substr(0, std::min<size_t>(said.find('\n'), 200)));
        if (!p->alive())
            return fail(ErrorKind::Infra, "--adapter \"{}\" {} before it listened{}; its output:\n{}", command, p->how_it_ended(),
                        stdout_hint(read_file(p->log_path_).value_or("")), p->log_tail());
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > ready_timeout_s) {
            p->stop(0);
            return fail(ErrorKind::Infra, "--adapter \"{}\" did not say it was listening within {:g} s{}; its output:\n{}", command,
                        ready_timeout_s, stdout_hint(read_file(p->log_path_).value_or("")), p->log_tail());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

AdapterProcess::~AdapterProcess() {
    stop(0);  // before log_dir_ goes
}

bool AdapterProcess::alive() {
    if (reaped_ || pid_ < 0) return false;
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) reaped_ = true;
    return !reaped_;
}

std::string AdapterProcess::how_it_ended() {
    if (alive()) return {};
    return describe_status(status_);
}

int AdapterProcess::exit_code() { return !alive() && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }

std::string AdapterProcess::signal_name() {
    if (alive() || !WIFSIGNALED(status_)) return {};
    const char *abbrev = ::sigabbrev_np(WTERMSIG(status_));
    return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", WTERMSIG(status_));
}

std::string AdapterProcess::log_tail(size_t max_bytes) const {
    std::string log = read_file(log_path_).value_or("");
    if (log.size() > max_bytes) log = "..." + log.substr(log.size() - max_bytes);
    return log;
}

void AdapterProcess::stop(double grace_s) {
    if (pid_ < 0) return;
    const auto t0 = std::chrono::steady_clock::now();
    while (alive() && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < grace_s)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!reaped_) end_guarded(pid_);  // SIGTERM, a moment, then everything it started
    if (!reaped_) {
        while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
    }
}

}  // namespace attngate
