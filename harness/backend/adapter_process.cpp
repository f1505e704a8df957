// Starting, watching and stopping an adapter child (below a guard, io/guard.hpp).
#include "backend/adapter_process.hpp"

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

/// The URL on the first LISTENING line of the log, or empty.
std::string listening_url(const std::string &log) {
    for (size_t at = 0; at < log.size();) {
        const size_t end = log.find('\n', at);
        if (end == std::string::npos) break;  // a line still being written
        const std::string_view line(log.data() + at, end - at);
        if (line.starts_with(kListening)) return std::string(line.substr(kListening.size()));
        at = end + 1;
    }
    return {};
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
    char log_name[] = "/tmp/attngate-adapter-XXXXXX";
    const int log_fd = ::mkstemp(log_name);
    if (log_fd < 0) return fail(ErrorKind::Infra, "--adapter: cannot create a log file in /tmp: {}", std::strerror(errno));
    ::fchmod(log_fd, 0600);  // readable whatever umask a kernel in this process set
    p->log_path_ = log_name;
    const std::string script = "exec " + command + " --http 127.0.0.1:0";
    const pid_t parent = ::getpid();
    const char *dir = start_directory().c_str();  // a restart after a kernel's chdir() too
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(log_fd);
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
        ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    ::close(log_fd);
    p->pid_ = pid;
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        const std::string log = read_file(p->log_path_).value_or("");
        if (std::string url = listening_url(log); !url.empty()) {
            p->url_ = std::move(url);
            return p;
        }
        if (!p->alive())
            return fail(ErrorKind::Infra, "--adapter \"{}\" {} before it listened; its output:\n{}", command, p->how_it_ended(),
                        p->log_tail());
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > ready_timeout_s) {
            p->stop(0);
            return fail(ErrorKind::Infra, "--adapter \"{}\" did not say it was listening within {:g} s; its output:\n{}", command,
                        ready_timeout_s, p->log_tail());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

AdapterProcess::~AdapterProcess() {
    stop(0);
    if (!log_path_.empty()) ::unlink(log_path_.c_str());
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
