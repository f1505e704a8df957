// The guard process. It runs between fork and the harness's next step in a process that
// may have been forked from a threaded one, so it only makes system calls: no allocation,
// no stdio, no locks.
#include "io/guard.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <initializer_list>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attngate {

namespace {

constexpr long kMs = 1'000'000;  // nanoseconds

double now_s() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void sleep_ms(long ms) {
    timespec t{0, ms * kMs};
    ::nanosleep(&t, nullptr);
}

/// The parent pid in /proc/<pid>/stat, or -1 (the process is gone).
pid_t parent_of(const char *pid_digits) {
    char path[48] = "/proc/";
    size_t n = 6;
    for (const char *p = pid_digits; *p && n < sizeof path - 6; ++p) path[n++] = *p;
    for (const char *p = "/stat"; *p; ++p) path[n++] = *p;
    path[n] = 0;
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[512];
    const ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (got <= 0) return -1;
    // "pid (comm) S ppid ...": comm may hold anything, so read after its last ')'.
    ssize_t at = got - 1;
    while (at > 0 && buf[at] != ')') --at;
    at += 4;  // ") S "
    pid_t ppid = 0;
    for (; at < got && buf[at] >= '0' && buf[at] <= '9'; ++at) ppid = ppid * 10 + (buf[at] - '0');
    return ppid;
}

/// Calls f(name) for each entry of the open directory `dir` but "." and "..", by getdents64
/// into a buffer on the stack: no allocation, so it may run in a signal handler.
template <class F>
void for_each_entry(int dir, F f) {
    struct Dirent64 {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
    };
    alignas(8) char buf[4096];
    for (;;) {
        const long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) return;
        for (long off = 0; off < n;) {
            const auto *d = reinterpret_cast<const Dirent64 *>(buf + off);
            off += d->reclen;
            const char *name = d->name;
            if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))) f(name);
        }
    }
}

/// SIGKILL to every process whose parent is `self`, found by reading /proc.
void kill_children_of(pid_t self) {
    const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    for_each_entry(dir, [self](const char *name) {
        pid_t pid = 0;
        const char *c = name;
        for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
        if (*c == 0 && pid > 0 && parent_of(name) == self) ::kill(pid, SIGKILL);
    });
    ::close(dir);
}

/// Removes `name` in directory `at`, and all below it; symbolic links are removed, not followed.
/// False when something under it stays. Each directory is visited once per pass of its parent,
/// and a parent makes another pass only when every entry went (the listing shifted while
/// read), so a subtree that cannot go costs one visit, not one per pass at every level.
bool remove_at(int at, const char *name, int depth) {
    if (::unlinkat(at, name, 0) == 0 || errno == ENOENT) return true;
    if (depth > 64) return false;
    for (int pass = 0; pass < 4; ++pass) {  // a directory: empty it, then remove it
        const int dir = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0) return errno == ENOENT;
        bool all = true;
        for_each_entry(dir, [dir, depth, &all](const char *entry) { all = remove_at(dir, entry, depth + 1) && all; });
        ::close(dir);
        if (::unlinkat(at, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return true;
        if (!all || errno != ENOTEMPTY) return false;
    }
    return false;
}

/// Reaps every child that has ended; `status` gets the real child's. False once there are no
/// children left at all.
bool reap(pid_t child, int &status, bool &child_ended) {
    for (;;) {
        int st = 0;
        const pid_t r = ::waitpid(-1, &st, WNOHANG);
        if (r == 0) return true;
        if (r < 0) return errno == EINTR;
        if (r == child) status = st, child_ended = true;
    }
}

/// Kills every descendant (each orphan comes to this subreaper once its parent is killed)
/// until none is left, for at most a few seconds (a process stuck in the kernel may not die).
void kill_descendants(pid_t child, int &status, bool &child_ended) {
    const double give_up = now_s() + 5.0;
    while (reap(child, status, child_ended) && now_s() < give_up) {
        kill_children_of(::getpid());
        sleep_ms(1);
    }
}

/// Ends this process as the child ended: its exit code, or its signal (without a core file).
[[noreturn]] void end_as(int status) {
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t only;
    ::sigemptyset(&only);
    ::sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
}

[[noreturn]] void guard(pid_t child, pid_t harness, const sigset_t &stops) {
    int status = 0;
    bool child_ended = false;
    for (;;) {
        timespec tick{0, 200 * kMs};  // also polls getppid: a harness that died before prctl
        siginfo_t info{};
        const int sig = ::sigtimedwait(&stops, &info, &tick);
        reap(child, status, child_ended);
        if (child_ended) break;
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || ::getppid() != harness) {
            ::kill(child, SIGTERM);  // a moment to end on its own terms (an adapter's shutdown)
            for (int i = 0; i < 100 && !child_ended; ++i) {
                sleep_ms(10);
                reap(child, status, child_ended);
            }
            break;
        }
    }
    kill_descendants(child, status, child_ended);
    end_as(child_ended ? status : SIGKILL);
}

}  // namespace

void become_guard(pid_t harness) {
    // The harness ignores SIGPIPE and counts SIGCONTs; the guard and its child start as usual.
    for (int sig : {SIGPIPE, SIGCONT}) std::signal(sig, SIG_DFL);
    ::setpgid(0, 0);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t stops, before;
    ::sigemptyset(&stops);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::sigaddset(&stops, sig);
    ::sigprocmask(SIG_BLOCK, &stops, &before);
    if (::getppid() != harness) ::_exit(127);  // the harness died before prctl
    const pid_t self = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) ::_exit(127);
    if (child == 0) {
        ::sigprocmask(SIG_SETMASK, &before, nullptr);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != self) ::_exit(127);
        return;
    }
    // The guard holds nothing of the harness's: a pipe it kept open would never end.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    guard(child, harness, stops);
}

void remove_tree_in_handler(const char *path) { remove_at(AT_FDCWD, path, 0); }

void end_guarded(pid_t guard) {
    ::kill(guard, SIGTERM);
    for (int i = 0; i < 400; ++i) {  // 4 s: the child's moment, then the killing
        siginfo_t info{};
        const int r = ::waitid(P_PID, static_cast<id_t>(guard), &info, WEXITED | WNOHANG | WNOWAIT);
        if ((r == 0 && info.si_pid == guard) || (r < 0 && errno != EINTR)) return;  // ended, or already reaped
        sleep_ms(10);
    }
    ::kill(-guard, SIGKILL);
}

}  // namespace attngate
