// Isolation: a child that returns hands back its observation; one that crashes, hangs or
// exits early becomes a CrashInfo with the signal, time and its last stderr lines.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "backend/isolation.hpp"
#include "io/guard.hpp"
#include "io/process.hpp"

using namespace attngate;

TEST_CASE("an isolated child's observation comes back intact", "[isolation]") {
    const Observation o = observe_isolated([] {
        Observation x;
        x.output.assign(100000, 0.5f);
        x.output[99999] = 7.0f;
        x.seconds = 1.5;
        return x;
    }, 10.0);
    REQUIRE_FALSE(o.crash);
    REQUIRE(o.output.size() == 100000);
    CHECK(o.output[99999] == 7.0f);
    CHECK(o.seconds == 1.5);
}

TEST_CASE("a crashing child is reported with its signal and stderr", "[isolation]") {
    const Observation o = observe_isolated([]() -> Observation {
        std::fprintf(stderr, "line one\nabout to abort\n");
        std::abort();
    }, 10.0);
    REQUIRE(o.crash);
    CHECK(o.crash->kind == "crash");
    CHECK(o.crash->signal == "SIGABRT");
    CHECK_THAT(o.crash->stderr_tail, Catch::Contains("about to abort"));
    CHECK_THAT(o.crash->describe(), Catch::Contains("crashed with SIGABRT"));
}

TEST_CASE("a hanging child is killed at the time limit", "[isolation]") {
    const auto t0 = std::chrono::steady_clock::now();
    const Observation o = observe_isolated([]() -> Observation {
        for (;;) ::pause();
    }, 0.5);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(o.crash);
    CHECK(o.crash->kind == "timeout");
    CHECK(took >= 0.5);
    CHECK(took < 5.0);
}

TEST_CASE("a child that exits before writing its result is not read as a result", "[isolation]") {
    const Observation o = observe_isolated([]() -> Observation { ::_exit(0); }, 10.0);
    REQUIRE(o.crash);
    CHECK(o.crash->signal == "incomplete result");
    const Observation e = observe_isolated([]() -> Observation { std::exit(7); }, 10.0);
    REQUIRE(e.crash);
    CHECK(e.crash->kind == "exit");
    CHECK(e.crash->exit_code == 7);
}

// A resident A/B side: requests and answers line by line; a child that ends or stays
// silent is an infrastructure error naming it, never a hang or a SIGPIPE.
TEST_CASE("a coprocess answers line by line and its end or silence is an error", "[isolation]") {
    const auto err = std::filesystem::temp_directory_path() / fmt::format("attngate-coprocess-{}.txt", ::getpid());
    {
        auto c = Coprocess::start({"/bin/sh", "-c", "echo hello; read x; echo \"got $x\"; echo bye >&2; exit 3"}, err, "the echo side");
        REQUIRE(c);
        CHECK((*c)->read_line(10).value() == "hello");
        CHECK((*c)->request("one", 10).value() == "got one");
        auto gone = (*c)->request("two", 10);
        REQUIRE(!gone);
        CHECK(gone.error().kind == ErrorKind::Infra);
        CHECK_THAT(gone.error().message, Catch::Contains("the echo side") && Catch::Contains("bye"));
        auto after = (*c)->request("three", 10);  // the socket is closed: an error, not SIGPIPE
        REQUIRE(!after);
    }
    {
        auto c = Coprocess::start({"/bin/sh", "-c", "exec sleep 30"}, err, "the silent side");
        REQUIRE(c);
        const auto t0 = std::chrono::steady_clock::now();
        auto silent = (*c)->request("anyone?", 0.3);
        REQUIRE(!silent);
        CHECK_THAT(silent.error().message, Catch::Contains("did not answer within"));
        CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
    }
    std::filesystem::remove(err);
}

namespace {
bool process_alive(pid_t pid) {
    std::FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return false;
    char buf[512] = {0};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const std::string stat(buf, n);
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}
}  // namespace

TEST_CASE("an isolated child's steps reach the parent in order, and its result with them", "[isolation]") {
    std::vector<std::pair<size_t, size_t>> steps;
    const pid_t parent = ::getpid();
    auto r = run_isolated(
        [parent](const StepFn &step) {
            if (!step || ::getpid() == parent) return std::string("no step, or not in a child");
            for (size_t i = 1; i <= 200; ++i) step(i, 200);  // 3.2 kB: even a one-page pipe holds them all
            return std::string("ok");
        },
        30.0, [&steps](size_t done, size_t total) { steps.emplace_back(done, total); });
    REQUIRE(r.has_value());
    CHECK(*r == "ok");
    REQUIRE(steps.size() == 200);
    for (size_t i = 0; i < steps.size(); ++i) REQUIRE(steps[i] == std::pair<size_t, size_t>{i + 1, 200});
    // Without a listener the work gets no StepFn to call.
    auto quiet = run_isolated([](const StepFn &step) { return std::string(step ? "a step" : "none"); }, 30.0, {});
    REQUIRE(quiet.has_value());
    CHECK(*quiet == "none");
}

TEST_CASE("what an isolated child starts in another session is killed when it ends", "[isolation]") {
    // Issue 24: a kill of the child's process group missed a grandchild that called setsid().
    for (const bool hang : {false, true}) {
        INFO((hang ? "the child hangs" : "the child returns"));
        int pids[2];
        REQUIRE(::pipe(pids) == 0);
        auto r = run_isolated(
            [&]() -> std::string {
                const pid_t daemon = ::fork();
                if (daemon == 0) {
                    ::setsid();
                    const pid_t inner = ::fork();
                    if (inner == 0) ::sleep(60), ::_exit(0);
                    // Twice, once for the child below and once for the test, in one write: a
                    // pipe write this small is atomic, so the daemon cannot be killed (once the
                    // child has read its copy and ended) before the test's copy is in the pipe.
                    const int pid = static_cast<int>(::getpid()), in = static_cast<int>(inner);
                    const int twice[4] = {pid, in, pid, in};
                    if (::write(pids[1], twice, sizeof twice) != sizeof twice) ::_exit(1);
                    ::sleep(60);
                    ::_exit(0);
                }
                int both[2];
                if (::read(pids[0], both, sizeof both) != sizeof both) return "no pids";
                if (hang) ::sleep(60);
                return "ok";
            },
            hang ? 3.0 : 10.0);  // 3 s: four forks under ASan on a loaded machine fit well within it
        CHECK(r.has_value() != hang);
        ::close(pids[1]);  // the write end: a daemon that died before writing is then EOF, not a hang
        int both[2] = {0, 0};
        REQUIRE(::read(pids[0], both, sizeof both) == sizeof both);
        ::close(pids[0]);
        for (const int pid : both) {
            CHECK_FALSE(process_alive(pid));
            if (process_alive(pid)) ::kill(pid, SIGKILL);
        }
    }
}

TEST_CASE("the signal handler's remover empties a tree without following its links", "[isolation]") {
    namespace fs = std::filesystem;
    const TempDir outside("remove-keep"), doomed("remove");
    REQUIRE(outside.made());
    REQUIRE(doomed.made());
    const fs::path kept = outside.path / "kept.txt";
    std::FILE *k = std::fopen(kept.c_str(), "w");
    REQUIRE(k);
    std::fclose(k);
    // More entries than one getdents64 buffer lists, nested directories, and links to a file
    // and a directory outside: the links go, what they point at stays.
    for (int d = 0; d < 3; ++d) {
        fs::path dir = doomed.path;
        for (int depth = 0; depth <= d; ++depth) dir /= "level" + std::to_string(depth);
        fs::create_directories(dir);
        for (int i = 0; i < 300; ++i) {
            std::FILE *f = std::fopen((dir / ("file-with-a-longish-name-" + std::to_string(i))).c_str(), "w");
            REQUIRE(f);
            std::fclose(f);
        }
    }
    fs::create_symlink(kept, doomed.path / "link-to-file");
    fs::create_directory_symlink(outside.path, doomed.path / "level0" / "link-to-dir");
    remove_tree_in_handler(doomed.path.c_str());
    CHECK_FALSE(fs::exists(fs::symlink_status(doomed.path)));
    CHECK(fs::exists(kept));
    remove_tree_in_handler(doomed.path.c_str());  // gone already: nothing happens
}

TEST_CASE("the signal handler's remover gives up at once on what it cannot remove", "[isolation]") {
    // Past 64 levels it stops; it used to retry each level 4 times, 4^65 passes under a chain of
    // 70 directories, and an interrupted attngate spun instead of dying.
    namespace fs = std::filesystem;
    const TempDir deep("remove-deep");
    REQUIRE(deep.made());
    fs::path p = deep.path / "top";
    for (int i = 0; i < 70; ++i) p /= "d";
    fs::create_directories(p);
    remove_tree_in_handler((deep.path / "top").c_str());  // returns: the test would hang otherwise
    CHECK(fs::exists(deep.path / "top"));  // what lies past 64 levels stays, and its parents with it
}
