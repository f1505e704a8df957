// The kernels' thread pool: between loops, workers poll for kSpin and then sleep on a
// condition variable, and they share one task counter within a loop.
//
// Why poll first: on a VM, a sleeping thread's vCPU halts, and waking it takes an
// interrupt through the hypervisor. On this project's 2-vCPU VMs that cost about 40-60 us
// per parallel loop, so two threads ran the smoke suite's small cases up to 2x slower
// than one (native, two loops per head), and with far more noise. A worker that polls
// for kSpin after each loop picks up the next loop of the same call, or the next call of
// a timing loop, at once; an idle pool still sleeps, and a core is held for at most kSpin.
#include "thread_pool.hpp"

#include <chrono>

#include <sched.h>

namespace attngate::kernels {

namespace {

constexpr auto kSpin = std::chrono::microseconds(50);

/// Polls `ready` for up to kSpin; true as soon as it holds.
template <typename Ready>
bool poll(Ready ready) {
    const auto end = std::chrono::steady_clock::now() + kSpin;
    do {
        for (int i = 0; i < 64; ++i) {
            if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    } while (std::chrono::steady_clock::now() < end);
    return ready();
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
        generation_.fetch_add(1, std::memory_order_release);  // ends a worker's poll
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
        busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    drain(0);
    if (poll([this] { return busy_.load(std::memory_order_acquire) == 0; })) return;
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return busy_.load(std::memory_order_relaxed) == 0; });
}

void ThreadPool::work(int worker) {
    uint64_t seen = 0;
    for (;;) {
        poll([&] { return generation_.load(std::memory_order_acquire) != seen; });
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
            if (stop_) return;
            seen = generation_.load(std::memory_order_relaxed);
        }
        if (worker < count_) drain(worker);  // worker ids stay below the task count
        {
            std::lock_guard lock(mutex_);
            if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
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
