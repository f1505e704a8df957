// Child processes: spawn with a time limit, PATH lookup, temporary directories.
#include "io/process.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "io/files.hpp"
#include "io/guard.hpp"

namespace attngate {

std::string utc_timestamp(std::time_t t) {
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

namespace {
/// The groups the handler below kills; 0: a free slot. A fixed array: the handler may only
/// read what a signal cannot find half-written.
volatile sig_atomic_t g_child_groups[8] = {};

/// The temporary directories alive, for the handler to remove: a slot's path is read only
/// while `ready`, which is set after the path is written and cleared before it is reused.
struct TempSlot {
    volatile sig_atomic_t ready = 0;
    char path[PATH_MAX] = {};
};
TempSlot g_temp_dirs[8];
std::mutex g_temp_slots;  ///< between threads making and removing them; never in the handler

double monotonic_s() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// SIGTERM, SIGINT or SIGHUP: end every child group, wait (a few seconds at most) until their
/// guards have ended, so nothing writes into the temporary directories any more, remove
/// those, then die of the same signal. System calls only.
extern "C" void end_children_and_temp_dirs_then_die(int sig) {
    // SIGTERM, not SIGKILL: each group's guard kills everything below it, in any group.
    for (auto &g : g_child_groups)
        if (g > 0) ::kill(-g, SIGTERM);
    const double give_up = monotonic_s() + 6.0;  // a guard's moment for its child, then its killing
    for (auto &g : g_child_groups)
        while (g > 0 && monotonic_s() < give_up) {
            siginfo_t info{};
            const int r = ::waitid(P_PID, static_cast<id_t>(g), &info, WEXITED | WNOHANG | WNOWAIT);
            if ((r == 0 && info.si_pid == g) || (r < 0 && errno != EINTR)) break;  // ended, or already reaped
            const timespec tick{0, 5'000'000};
            ::nanosleep(&tick, nullptr);
        }
    for (auto &slot : g_temp_dirs)
        if (slot.ready) remove_tree_in_handler(slot.path);
    std::signal(sig, SIG_DFL);
    ::raise(sig);
}

/// Installs the handler above once, for the first child group or temporary directory.
void end_cleanly_on_termination() {
    static const bool installed = [] {
        struct sigaction sa {};
        sa.sa_handler = end_children_and_temp_dirs_then_die;
        ::sigemptyset(&sa.sa_mask);
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaddset(&sa.sa_mask, sig);  // one at a time
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
        return true;
    }();
    (void)installed;
}
}  // namespace

TempDir::TempDir(const std::string &what) {
    const char *tmp = std::getenv("TMPDIR");
    const std::string in = tmp && *tmp ? tmp : "/tmp";
    std::string name = in + "/attngate-" + what + "-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
        problem_ = fmt::format("cannot make a temporary directory in {}{}: {}", in, tmp && *tmp ? " ($TMPDIR)" : "", std::strerror(errno));
        return;
    }
    ::chmod(name.c_str(), 0700);  // whatever umask a kernel in this process set
    path = name;
    end_cleanly_on_termination();
    const std::lock_guard lock(g_temp_slots);
    for (auto &slot : g_temp_dirs)
        if (!slot.ready && name.size() < sizeof slot.path) {
            std::memcpy(slot.path, name.c_str(), name.size() + 1);
            std::atomic_signal_fence(std::memory_order_seq_cst);  // the path is whole before a handler may read it
            slot.ready = 1;
            return;
        }
}

Result<void> TempDir::made() const {
    if (path.empty()) return fail(ErrorKind::Infra, "{}", problem_);
    return {};
}

TempDir::~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    const std::lock_guard lock(g_temp_slots);
    for (auto &slot : g_temp_dirs)
        if (slot.ready && path == slot.path) slot.ready = 0;
}

namespace {
volatile sig_atomic_t g_continued = 0;  ///< SIGCONTs received
extern "C" void count_continue(int) { g_continued = g_continued + 1; }
}  // namespace

WatchedClock::WatchedClock() {
    static const bool installed = [] {
        struct sigaction sa {};
        sa.sa_handler = count_continue;
        sa.sa_flags = SA_RESTART;
        ::sigemptyset(&sa.sa_mask);
        return ::sigaction(SIGCONT, &sa, nullptr) == 0;
    }();
    (void)installed;
    start_ = last_ = std::chrono::steady_clock::now();
    continued_ = g_continued;
}

double WatchedClock::seconds() {
    const auto now = std::chrono::steady_clock::now();
    if (const long c = g_continued; c != continued_) {
        stopped_ += now - last_;
        continued_ = c;
    }
    last_ = now;
    return std::chrono::duration<double>(now - start_ - stopped_).count();
}

void kill_group_on_termination(pid_t pgid) {
    end_cleanly_on_termination();
    for (auto &g : g_child_groups)
        if (g == 0) {
            g = pgid;
            return;
        }
    ATTNGATE_CHECK(!"more child groups alive at once than kill_group_on_termination keeps");
}

void forget_group_on_termination(pid_t pgid) {
    for (auto &g : g_child_groups)
        if (g == pgid) g = 0;
}

namespace {

/// Forks argv (no shell, PATH searched) in its own process group, killed with the harness
/// and registered with kill_group_on_termination: stdin from in_fd (-1: the harness's),
/// stdout to out_fd (-1: /dev/null), stderr into err_path. -1 when fork fails.
pid_t fork_exec(const std::vector<std::string> &argv, int in_fd, int out_fd, const std::filesystem::path &err_path,
                const std::vector<std::string> &extra_env) {
    const pid_t parent = ::getpid();
    const char *dir = start_directory().c_str();
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        become_guard(parent);  // nothing it starts outlives it or the harness, even a SIGKILLed one
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_DFL);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::fchmod(err, 0644);  // the harness reads it back whatever the umask
        if (in_fd >= 0) ::dup2(in_fd, STDIN_FILENO);
        ::dup2(out_fd >= 0 ? out_fd : ::open("/dev/null", O_WRONLY), STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
        if (*dir && ::chdir(dir) != 0) {
            std::fprintf(stderr, "cannot enter %s, where attngate started: %s\n", dir, std::strerror(errno));
            ::_exit(127);
        }
        for (const auto &e : extra_env) ::putenv(const_cast<char *>(e.c_str()));
        std::vector<char *> args;
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: no window in which a signal finds the group missing
    kill_group_on_termination(pid);
    return pid;
}

}  // namespace

Result<void> spawn(const std::vector<std::string> &argv, const std::filesystem::path &err_path, double timeout_s,
                   const std::string &what, const std::vector<std::string> &extra_env, const std::filesystem::path &out_path) {
    const int out = out_path.empty() ? -1 : ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!out_path.empty() && out < 0) return fail(ErrorKind::Infra, "cannot write {}: {}", out_path.string(), std::strerror(errno));
    const pid_t pid = fork_exec(argv, -1, out, err_path, extra_env);
    if (out >= 0) ::close(out);
    if (pid < 0) return fail(ErrorKind::Infra, "cannot fork for {}", what);
    WatchedClock clock;
    int status = 0;
    bool timed_out = false;
    for (;;) {
        siginfo_t info{};
        // WNOWAIT: the child stays a zombie, so its group id cannot be reused before the kill below.
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
        if (clock.seconds() > timeout_s) {
            timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    end_guarded(pid);  // the child on a timeout, and whatever it left running in every case
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    forget_group_on_termination(pid);
    if (timed_out) return fail(ErrorKind::Infra, "{} did not finish within {:.0f} s", what, timeout_s);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::string tail = read_file(err_path).value_or("");
    if (tail.size() > 400) tail = tail.substr(tail.size() - 400);
    return fail(ErrorKind::Infra, "{} failed ({}): {}", what,
                WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status)), tail);
}

Result<std::unique_ptr<Coprocess>> Coprocess::start(const std::vector<std::string> &argv, const std::filesystem::path &err_path,
                                                    const std::string &what) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail(ErrorKind::Infra, "cannot connect to {}", what);
    const pid_t pid = fork_exec(argv, sv[1], sv[1], err_path, {});
    if (pid < 0) {
        ::close(sv[0]), ::close(sv[1]);
        return fail(ErrorKind::Infra, "cannot fork for {}", what);
    }
    ::close(sv[1]);
    std::unique_ptr<Coprocess> c(new Coprocess());
    c->what_ = what;
    c->err_path_ = err_path;
    c->fd_ = sv[0];
    c->pid_ = pid;
    return c;
}

Coprocess::~Coprocess() {
    if (pid_ < 0) return;
    ::shutdown(fd_, SHUT_WR);  // end of requests: a server exits on its own
    for (int i = 0; i < 100; ++i) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    end();
}

void Coprocess::end() {
    if (pid_ < 0) return;
    end_guarded(pid_);  // whatever it left running, and itself when it did not exit
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    forget_group_on_termination(pid_);
    ::close(fd_);
    pid_ = -1;
}

std::string Coprocess::stderr_tail() const {
    std::string tail = read_file(err_path_).value_or("");
    return tail.size() > 400 ? tail.substr(tail.size() - 400) : tail;
}

Error Coprocess::failed(const std::string &why) {
    end();
    return Error{ErrorKind::Infra, fmt::format("{} {}: {}", what_, why, stderr_tail())};
}

Result<std::string> Coprocess::read_line(double timeout_s) {
    if (pid_ < 0) return fail(ErrorKind::Infra, "{} has already ended", what_);
    constexpr size_t kMaxLine = 64u << 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            return line;
        }
        if (buffer_.size() > kMaxLine) return std::unexpected(failed(fmt::format("wrote a line over {} MiB", kMaxLine >> 20)));
        const double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (left <= 0) return std::unexpected(failed(fmt::format("did not answer within {:.0f} s", timeout_s)));
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char buf[65536];
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) buffer_.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR) return std::unexpected(failed("ended without answering"));
    }
}

Result<std::string> Coprocess::request(const std::string &line, double timeout_s) {
    if (pid_ < 0) return fail(ErrorKind::Infra, "{} has already ended", what_);
    const std::string msg = line + "\n";
    for (size_t done = 0; done < msg.size();) {
        const ssize_t n = ::send(fd_, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::unexpected(failed("stopped reading requests"));
        done += static_cast<size_t>(n);
    }
    return read_line(timeout_s);
}

std::filesystem::path find_on_path(const std::string &name) {
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? std::filesystem::path(name) : std::filesystem::path();
    const char *path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        const size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
        if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return {};
}

Result<std::vector<std::string>> split_command(const std::string &line) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quote) {
            if (c == quote) quote = 0;
            else if (c == '\\' && quote == '"' && i + 1 < line.size()) word += line[++i];
            else word += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == '\\' && i + 1 < line.size()) {
            word += line[++i];
            in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) words.push_back(std::move(word)), word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (quote) return fail(ErrorKind::Usage, "\"{}\": unterminated {} quote", line, quote);
    if (in_word) words.push_back(std::move(word));
    if (words.empty()) return fail(ErrorKind::Usage, "an empty command line");
    return words;
}

const std::filesystem::path &start_directory() {
    static const std::filesystem::path dir = [] {
        std::error_code ec;
        auto here = std::filesystem::current_path(ec);
        return ec ? std::filesystem::path() : here;
    }();
    return dir;
}

}  // namespace attngate
