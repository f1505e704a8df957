// The kernels' thread pool: every task exactly once, worker ids in range, reusable.
#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "thread_pool.hpp"

using attngate::kernels::ThreadPool;

TEST_CASE("the pool runs every task exactly once, on worker ids below the task count", "[kernels][threads]") {
    for (int threads : {1, 2, 5}) {
        ThreadPool pool(threads);
        CHECK(pool.size() == threads);
        for (int64_t count : {0, 1, 3, 100}) {
            std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
            std::atomic<int> bad_worker{0};
            pool.run(count, [&](int64_t task, int worker) {
                seen[static_cast<size_t>(task)]++;
                if (worker < 0 || worker >= threads || worker >= count) bad_worker++;
            });
            for (const auto &s : seen) CHECK(s.load() == 1);
            CHECK(bad_worker.load() == 0);
        }
    }
}

TEST_CASE("back-to-back loops see each other's writes, and a pool destroyed mid-poll stops", "[kernels][threads]") {
    // Workers poll between loops: each loop must still start after the last one ended.
    for (int round = 0; round < 20; ++round) {
        ThreadPool pool(3);
        std::vector<int64_t> data(64, 0);
        for (int loop = 0; loop < 200; ++loop)
            pool.run(static_cast<int64_t>(data.size()), [&](int64_t task, int) { data[static_cast<size_t>(task)] += 1; });
        for (int64_t v : data) REQUIRE(v == 200);
    }  // destroyed right after a loop, while its workers poll
}

TEST_CASE("an idle pool sleeps: its workers poll only briefly after a loop", "[kernels][threads]") {
    // Measured as CPU time, which load can only lower: a worker that kept polling would
    // burn most of the 300 ms below even on a busy machine.
    ThreadPool pool(2);
    std::atomic<int64_t> sum{0};
    pool.run(8, [&](int64_t task, int) { sum += task; });
    REQUIRE(sum.load() == 28);
    auto cpu = [] {
        timespec t{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
    };
    const double before = cpu();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double idle = cpu() - before;
    INFO("CPU seconds while idle: " << idle);
    CHECK(idle < 0.03);
}
