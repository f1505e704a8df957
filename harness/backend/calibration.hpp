// The calibration workload of the perf gate: a fixed piece of work timed in the same child
// as the kernels, its repetitions interleaved with theirs, so that a baseline can store a
// kernel's time relative to the machine's speed at that moment. A machine that is
// uniformly slower today (a loaded runner, a slower instance) slows both; a slower
// kernel slows only itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace attngate {

/// Names the workload; stored with every calibrated baseline. Change it whenever the
/// workload changes: calibration samples of two different workloads are not comparable.
inline constexpr const char *kCalibrationWorkload = "sgemm-f32-64x64x64-v1";

/// Runs the workload once on the calling thread (about 0.26 MFLOP of plain f32
/// multiply-adds over 48 KiB, in cache like a kernel's tiles).
void run_calibration_workload();

/// The same workload on several threads at once, each writing its own product, joined like
/// a kernel's parallel loop: a call lasts as long as its slowest thread. Unlike the
/// kernels' ThreadPool, no thread can take over another's share (there is no shared task
/// counter): a thread the scheduler holds back holds the call back, which is what it
/// measures. It feels what a
/// one-thread workload cannot: a competing process that takes one of the cores holds a
/// multi-threaded kernel up at every join (measured: two-thread kernels 2.4x slower while
/// the one-thread workload barely moved). The machine-speed guard reads it; nothing is
/// divided by it. Threads are started once, here; a call wakes them.
class ParallelCalibration {
public:
    /// threads >= 1 in all (threads - 1 are started here).
    explicit ParallelCalibration(int threads);
    ~ParallelCalibration();
    ParallelCalibration(const ParallelCalibration &) = delete;
    ParallelCalibration &operator=(const ParallelCalibration &) = delete;

    /// One call: every thread runs the workload once; returns when all have.
    void run();

    /// Workloads finished so far, by every thread (threads x calls once run() returned).
    uint64_t workloads_done();

private:
    void work();

    std::vector<std::jthread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    uint64_t generation_ = 0;  // guarded by mutex_
    size_t busy_ = 0;          // guarded by mutex_
    uint64_t done_count_ = 0;  // guarded by mutex_
    bool stop_ = false;        // guarded by mutex_
};

}  // namespace attngate
