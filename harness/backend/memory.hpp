// Memory accounting through two independent eyes: the allocator the ABI hands to kernels
// (every byte the kernel asks the harness for) and process-wide probes (glibc's heap
// accounting and resident set size), which also see what a kernel allocates behind the
// harness's back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attngate/kernel_abi.h"

namespace attngate {

class CountingAllocator {
public:
    CountingAllocator();
    CountingAllocator(const CountingAllocator &) = delete;
    CountingAllocator &operator=(const CountingAllocator &) = delete;

    const attngate_allocator *abi() const { return &abi_; }
    int64_t live_bytes() const { return live_; }
    int64_t peak_bytes() const { return peak_; }
    int64_t allocations() const { return allocations_; }
    int64_t frees() const { return frees_; }
    /// Starts a new peak measurement from the current live bytes.
    void reset_peak() { peak_ = live_; }

private:
    static void *alloc(void *ctx, size_t bytes);
    static void release(void *ctx, void *ptr);

    attngate_allocator abi_;
    int64_t live_ = 0, peak_ = 0, allocations_ = 0, frees_ = 0;
};

/// Process-wide memory at one instant.
struct ProcessMemory {
    int64_t heap_bytes = 0;  ///< bytes in use by malloc/new (mallinfo2: uordblks + hblkhd)
    int64_t rss_bytes = 0;   ///< resident set size (/proc/self/statm)
};

ProcessMemory sample_process_memory();

/// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS; false if unsupported.
bool reset_peak_rss();

/// The peak RSS since the last reset (VmHWM), or -1 when /proc does not say.
int64_t peak_rss_bytes();

}  // namespace attngate
