// Memory accounting through two independent eyes: the allocator the ABI hands to kernels
// (every byte the kernel asks the harness for) and process-wide probes (glibc's heap
// accounting and resident set size), which also see what a kernel allocates behind the
// harness's back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attngate/kernel_abi.h"

namespace attngate {

/// The allocator handed to kernels: it counts every byte, hands out 64-byte aligned
/// blocks between guard bytes, and knows every block it gave, so a write past a block, a
/// free of a pointer it never gave (or gave and took back) and a block never freed are
/// all seen and blamed on the kernel.
class CountingAllocator {
public:
    CountingAllocator();
    ~CountingAllocator();  ///< frees what kernels left behind (already counted as leaked)
    CountingAllocator(const CountingAllocator &) = delete;
    CountingAllocator &operator=(const CountingAllocator &) = delete;

    const attngate_allocator *abi() const { return &abi_; }
    int64_t live_bytes() const { return live_; }
    int64_t peak_bytes() const { return peak_; }
    int64_t allocations() const { return allocations_; }
    int64_t frees() const { return frees_; }
    /// Starts a new peak measurement from the current live bytes.
    void reset_peak() { peak_ = live_; }
    /// Checks the guard bytes of every live block (a block never freed is never checked by
    /// free); new problems join violations().
    void audit();
    /// What the kernel did wrong with this allocator, each said once.
    const std::vector<std::string> &violations() const { return violations_; }

private:
    static void *alloc(void *ctx, size_t bytes);
    static void release(void *ctx, void *ptr);
    void check_guards(unsigned char *user, size_t bytes);
    void violation(std::string what);

    attngate_allocator abi_;
    int64_t live_ = 0, peak_ = 0, allocations_ = 0, frees_ = 0;
    std::unordered_map<void *, size_t> blocks_;  ///< user pointer -> bytes
    std::vector<std::string> violations_;
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

/// mallinfo2 counts the chunks parked in glibc's per-thread caches (tcache) as in use, so
/// a clean kernel's heap seems to grow for its first calls as those caches fill. The
/// caches can only be turned off when a process starts (GLIBC_TUNABLES): this re-executes
/// the program once with them off, and returns (doing nothing) when they already are or
/// when the re-exec is impossible.
void exec_with_exact_heap_accounting(char **argv);

}  // namespace attngate
