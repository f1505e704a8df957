// The supervisor of a --no-isolation run: a page shared with the child says whether body()
// returned, with what, and what the child was doing.
#include "io/supervisor.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "io/error.hpp"
#include "io/files.hpp"

namespace attngate {

namespace {

struct SharedState {
    std::atomic<int32_t> returned{0};
    int32_t exit_code = 0;
    char activity[256] = {};
};

SharedState *g_state = nullptr;  // in the child only
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;

extern "C" void forward_to_child(int sig) {
    g_forwarded = sig;
    if (g_child > 0) ::kill(g_child, sig);
}

/// True when a debugger is attached: it follows the process, not a forked child.
bool traced() {
    const auto status = read_file("/proc/self/status").value_or("");
    const size_t at = status.find("TracerPid:");
    return at != std::string::npos && std::atol(status.c_str() + at + 10) != 0;
}

std::string how_it_ended(int status) {
    if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
    const char *abbrev = WIFSIGNALED(status) ? ::sigabbrev_np(WTERMSIG(status)) : nullptr;
    return abbrev ? fmt::format("was killed by SIG{}", abbrev) : "ended";
}

}  // namespace

void note_activity(std::string_view what) {
    if (!g_state) return;
    // Written while the child runs; read by the supervisor only once the child has ended.
    const size_t n = std::min(what.size(), sizeof g_state->activity - 1);
    std::memcpy(g_state->activity, what.data(), n);
    g_state->activity[n] = 0;
}

SupervisedEnd run_supervised(const std::function<int()> &body) {
    if (traced()) return {body(), {}};
    void *page = ::mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ATTNGATE_CHECK(page != MAP_FAILED);
    auto *state = new (page) SharedState{};
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    ATTNGATE_CHECK(pid >= 0);
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(kExitInfra);
        g_state = state;
        const int rc = body();
        std::fflush(stdout);
        std::fflush(stderr);
        state->exit_code = rc;
        state->returned.store(1);
        ::_exit(rc);  // no plugin destructor or atexit handler runs after the verdict
    }
    g_child = pid;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        struct sigaction sa {};
        sa.sa_handler = forward_to_child;
        ::sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (const int sig = g_forwarded) {  // interrupted: end as an unsupervised run would
        std::signal(sig, SIG_DFL);
        ::raise(sig);
    }
    SupervisedEnd end;
    if (state->returned.load()) end.exit_code = state->exit_code;
    else end.ended_early = how_it_ended(status) + (state->activity[0] ? fmt::format(" while running {}", state->activity) : "");
    ::munmap(page, sizeof(SharedState));
    return end;
}

}  // namespace attngate
