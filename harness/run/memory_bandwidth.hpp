// The bench's memory yardstick: STREAM's copy (a = b) and triad (a = b + s c) over arrays
// far larger than the last-level cache, on a given number of threads, each thread its own
// slice (first touched by it). The decode row's KV bytes per second stand beside it, as the
// flash rows stand beside sgemm.
#pragma once

#include <barrier>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace attngate {

/// A large buffer mapped for the bench, asking the kernel for transparent huge pages
/// (MADV_HUGEPAGE) as a long-lived KV cache pool would be: the STREAM arrays and the decode
/// pools get the same pages, so neither pays TLB misses the other does not. Zero-filled.
class HugeBuffer {
public:
    explicit HugeBuffer(size_t bytes);
    ~HugeBuffer();
    HugeBuffer(const HugeBuffer &) = delete;
    HugeBuffer &operator=(const HugeBuffer &) = delete;
    unsigned char *data() const { return data_; }
    size_t size() const { return bytes_; }

private:
    unsigned char *data_ = nullptr;
    size_t bytes_ = 0, mapped_ = 0;
};

class StreamBandwidth {
public:
    /// Arrays of `bytes_per_array` bytes each (three of them), on `threads` threads (threads - 1
    /// are started here and wait between calls).
    StreamBandwidth(int threads, int64_t bytes_per_array);
    ~StreamBandwidth();
    StreamBandwidth(const StreamBandwidth &) = delete;
    StreamBandwidth &operator=(const StreamBandwidth &) = delete;

    /// One pass of a = b over every slice.
    void copy();
    /// One pass of a = b + 3 c.
    void triad();
    /// Bytes one pass moves, counted as STREAM counts them: 2 arrays for copy, 3 for triad.
    double copy_bytes() const { return 2.0 * static_cast<double>(n_) * sizeof(double); }
    double triad_bytes() const { return 3.0 * static_cast<double>(n_) * sizeof(double); }
    int64_t bytes_per_array() const { return n_ * static_cast<int64_t>(sizeof(double)); }
    /// True when a - b - 3 c is zero after a triad (the passes ran, on every slice).
    bool verify_triad() const;

private:
    enum class Op { Init, Copy, Triad, Stop };
    void run(Op op);
    void slice(int worker, Op op);

    int threads_;
    int64_t n_;
    HugeBuffer a_buf_, b_buf_, c_buf_;
    double *a_, *b_, *c_;
    std::barrier<> start_, done_;
    Op op_ = Op::Init;
    std::vector<std::jthread> workers_;
};

/// The default array size: four times the last-level cache (STREAM's rule), at least 64 MiB
/// and at most 1 GiB per array; `llc_bytes` is what sysconf reports (0: unknown).
int64_t stream_array_bytes(int64_t llc_bytes);

/// The last-level cache's size as the OS reports it, 0 when unknown.
int64_t last_level_cache_bytes();

}  // namespace attngate
