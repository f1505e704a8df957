// The kernels' thread pool: workers sleep on a condition variable between loops (no
// spinning, the cores stay free for others) and share one task counter within a loop.
#include "thread_pool.hpp"

#include <sched.h>

namespace attngate::kernels {

ThreadPool::ThreadPool(int threads) {
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    workers_.clear();  // joined here, while the mutex and condition variables they use still live
}

void ThreadPool::drain(int worker) {
    for (int64_t t = next_.fetch_add(1, std::memory_order_relaxed); t < count_; t = next_.fetch_add(1, std::memory_order_relaxed))
        fn_(ctx_, t, worker);
}

void ThreadPool::run_erased(int64_t count, TaskFn fn, void *ctx) {
    if (count <= 0) return;
    if (workers_.empty() || count == 1) {
        for (int64_t t = 0; t < count; ++t) fn(ctx, t, 0);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        fn_ = fn;
        ctx_ = ctx;
        count_ = count;
        next_.store(0, std::memory_order_relaxed);
        busy_ = static_cast<int>(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    drain(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
}

void ThreadPool::work(int worker) {
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
        }
        if (worker < count_) drain(worker);  // worker ids stay below the task count
        {
            std::lock_guard lock(mutex_);
            if (--busy_ == 0) done_.notify_one();
        }
    }
}

int available_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace attngate::kernels
