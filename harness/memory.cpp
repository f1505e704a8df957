// Counting allocator: a 16-byte header in front of each block records its size.
#include "memory.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

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

}  // namespace attngate
