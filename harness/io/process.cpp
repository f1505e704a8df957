// Child processes: spawn with a time limit, PATH lookup, temporary directories.
#include "io/process.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "io/files.hpp"

namespace attngate {

TempDir::TempDir(const std::string &what) {
    std::string name = "/tmp/attngate-" + what + "-XXXXXX";
    ATTNGATE_CHECK(::mkdtemp(name.data()) != nullptr);
    path = name;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

namespace {
volatile sig_atomic_t g_child_group = 0;  ///< for the handler below; 0: none

extern "C" void kill_child_group_then_die(int sig) {
    if (g_child_group > 0) ::kill(-g_child_group, SIGKILL);
    std::signal(sig, SIG_DFL);
    ::raise(sig);
}
}  // namespace

void kill_group_on_termination(pid_t pgid) {
    static const bool installed = [] {
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
            struct sigaction sa {};
            sa.sa_handler = kill_child_group_then_die;
            ::sigemptyset(&sa.sa_mask);
            ::sigaction(sig, &sa, nullptr);
        }
        return true;
    }();
    (void)installed;
    g_child_group = pgid;
}

Result<void> spawn(const std::vector<std::string> &argv, const std::filesystem::path &err_path, double timeout_s,
                   const std::string &what, const std::vector<std::string> &extra_env) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return fail(ErrorKind::Infra, "cannot fork for {}", what);
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the harness, even a SIGKILLed one
        if (::getppid() != parent) ::_exit(127);
        for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, SIG_DFL);
        const int devnull = ::open("/dev/null", O_WRONLY);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(devnull, STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
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
    const auto t0 = std::chrono::steady_clock::now();
    int status = 0;
    bool timed_out = false;
    for (;;) {
        siginfo_t info{};
        // WNOWAIT: the child stays a zombie, so its group id cannot be reused before the kill below.
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
            timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(-pid, SIGKILL);  // the child on a timeout, and whatever it left running in every case
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    kill_group_on_termination(0);
    if (timed_out) return fail(ErrorKind::Infra, "{} did not finish within {:.0f} s", what, timeout_s);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::string tail = read_file(err_path).value_or("");
    if (tail.size() > 400) tail = tail.substr(tail.size() - 400);
    return fail(ErrorKind::Infra, "{} failed ({}): {}", what,
                WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status)), tail);
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

}  // namespace attngate
