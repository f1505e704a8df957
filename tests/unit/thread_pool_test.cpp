// The kernels' thread pool: every task exactly once, worker ids in range, reusable.
#include <atomic>
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
