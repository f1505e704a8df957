// The allocator the ABI hands to kernels: every byte counted (live, peak, calls), so the
// workspace a kernel asks for is visible to the gate.
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

}  // namespace attngate
