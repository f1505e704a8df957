// The bench's decode rows: one decode step for a batch of sequences over a paged KV cache
// (scattered pages), timed in the same run as STREAM copy and triad on the same threads, so
// that its KV bytes per second stand beside the machine's memory bandwidth of the moment.
#pragma once

#include <memory>
#include <vector>

#include "backend/kernel_registry.hpp"
#include "backend/timing.hpp"
#include "run/bench.hpp"

namespace attngate {

class DecodeBench {
public:
    /// The batch of o.decode, each of o.decode_kernels on each thread count, and one
    /// bandwidth yardstick per thread count.
    static Result<std::unique_ptr<DecodeBench>> make(const KernelRegistry &reg, const BenchOptions &o, const std::vector<int> &threads);
    ~DecodeBench();
    DecodeBench(const DecodeBench &) = delete;
    DecodeBench &operator=(const DecodeBench &) = delete;

    /// Appends the decode calls and the copy and triad passes to `requests`; they must
    /// outlive the timing.
    void add_requests(std::vector<TimedCall> &requests);
    /// Fills out.decode and out.bandwidth from the samples of every request, in order.
    void collect(const std::vector<std::vector<double>> &samples, BenchResults &out) const;

private:
    DecodeBench();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace attngate
