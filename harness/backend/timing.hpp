// The timing engine: Google Benchmark used as a library. Every case x kernel is
// registered programmatically, repetitions are randomly interleaved across all of them
// (so a burst of machine noise does not land on one case only), and a reporter keeps
// every repetition's time per call instead of only the aggregates.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attngate {

struct TimingOptions {
    int repetitions = 15;      ///< samples per benchmark
    double min_time_s = 0.02;  ///< minimum time of one repetition (many calls when fast)
    bool random_interleaving = true;
    /// Called with a request's index each time it has one more repetition timed (at most
    /// `repetitions` times per request): progress for a long set.
    std::function<void(size_t request)> on_repetition{};
};

/// One thing to time: `call` runs the kernel once.
struct TimedCall {
    std::string name;
    std::function<void()> call;
    /// Calls per repetition; 0: as many as min_time_s takes (estimated first, which costs
    /// about one more repetition).
    int64_t iterations = 0;
};

/// Seconds per call of every repetition, one vector per request, in request order. With
/// cpu_s, also the process's CPU seconds per call (every thread's, as Google Benchmark's
/// MeasureProcessCPUTime counts them: the kernels run on a thread pool) in the same shape.
std::vector<std::vector<double>> time_calls(const std::vector<TimedCall> &requests, const TimingOptions &options,
                                            std::vector<std::vector<double>> *cpu_s = nullptr);

}  // namespace attngate
