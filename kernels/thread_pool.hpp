// A persistent pool of worker threads for the built-in kernels, kept in a kernel instance
// so that threads are created once (after the harness's fork), not on every call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace attngate::kernels {

/// Threads that run the tasks of one parallel loop at a time. The calling thread works
/// too, as worker 0; tasks are handed out in index order from a shared counter, so a
/// loop's result never depends on which worker ran which task.
class ThreadPool {
public:
    /// threads >= 1 in all (threads - 1 are started here).
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    /// Calls fn(task, worker) for every task in [0, count), worker in
    /// [0, min(size(), count)), and returns when all have finished. Not reentrant.
    template <typename Fn>
    void run(int64_t count, Fn &&fn) {
        using F = std::remove_reference_t<Fn>;
        run_erased(count, [](void *ctx, int64_t task, int worker) { (*static_cast<F *>(ctx))(task, worker); },
                   const_cast<void *>(static_cast<const void *>(&fn)));
    }

private:
    using TaskFn = void (*)(void *ctx, int64_t task, int worker);
    void run_erased(int64_t count, TaskFn fn, void *ctx);
    void work(int worker);
    void drain(int worker);

    std::vector<std::jthread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    // Both change under mutex_ (the condition variables' contract) and are atomic so that
    // a polling thread can read them without it.
    std::atomic<uint64_t> generation_{0};  // bumped per loop, and at stop
    std::atomic<int> busy_{0};             // workers still in the current loop
    bool stop_ = false;                    // guarded by mutex_
    TaskFn fn_ = nullptr;
    void *ctx_ = nullptr;
    int64_t count_ = 0;
    std::atomic<int64_t> next_{0};
};

/// Number of CPUs this process may run on (its affinity mask), at least 1.
int available_cpus();

}  // namespace attngate::kernels
