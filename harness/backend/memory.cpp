// Counting allocator (a 16-byte header in front of each block records its size) and the
// process-wide memory probes.
#include "backend/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <malloc.h>
#include <unistd.h>

namespace attngate {

namespace {
constexpr size_t kHeader = 16;  // keeps the block 16-byte aligned
}

CountingAllocator::CountingAllocator() : abi_{this, &CountingAllocator::alloc, &CountingAllocator::release} {}

void *CountingAllocator::alloc(void *ctx, size_t bytes) {
    auto *self = static_cast<CountingAllocator *>(ctx);
    auto *base = static_cast<unsigned char *>(std::malloc(bytes + kHeader));
    if (!base) return nullptr;
    std::memcpy(base, &bytes, sizeof bytes);
    self->live_ += static_cast<int64_t>(bytes);
    self->peak_ = std::max(self->peak_, self->live_);
    ++self->allocations_;
    return base + kHeader;
}

void CountingAllocator::release(void *ctx, void *ptr) {
    if (!ptr) return;
    auto *self = static_cast<CountingAllocator *>(ctx);
    auto *base = static_cast<unsigned char *>(ptr) - kHeader;
    size_t bytes;
    std::memcpy(&bytes, base, sizeof bytes);
    self->live_ -= static_cast<int64_t>(bytes);
    ++self->frees_;
    std::free(base);
}

ProcessMemory sample_process_memory() {
    ProcessMemory m;
    const struct mallinfo2 mi = ::mallinfo2();
    m.heap_bytes = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
    std::ifstream statm("/proc/self/statm");
    int64_t size = 0, resident = 0;
    if (statm >> size >> resident) m.rss_bytes = resident * ::sysconf(_SC_PAGESIZE);
    return m;
}

bool reset_peak_rss() {
    FILE *f = std::fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

int64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // kB
    return -1;
}

}  // namespace attngate
