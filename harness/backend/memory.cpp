// Counting allocator (a 16-byte header in front of each block records its size) and the
// process-wide memory probes.
#include "backend/memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <malloc.h>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace attngate {

namespace {
// [guard 64 B][the kernel's bytes][guard 64 B]: 64-byte aligned for vector loads, and a
// write up to 64 bytes outside the block lands in bytes the allocator can check.
constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xA5;

size_t padded(size_t bytes) { return (bytes + 2 * kGuard + 63) / 64 * 64; }
}  // namespace

CountingAllocator::CountingAllocator() : abi_{this, &CountingAllocator::alloc, &CountingAllocator::release} {
    blocks_.reserve(256);  // the registry's buckets are not grown inside a measured series
}

CountingAllocator::~CountingAllocator() {
    for (const auto &[user, bytes] : blocks_) std::free(static_cast<unsigned char *>(user) - kGuard);
}

void CountingAllocator::violation(std::string what) {
    if (std::find(violations_.begin(), violations_.end(), what) == violations_.end()) violations_.push_back(std::move(what));
}

void *CountingAllocator::alloc(void *ctx, size_t bytes) {
    auto *self = static_cast<CountingAllocator *>(ctx);
    if (bytes > (size_t{1} << 48)) return nullptr;  // no machine has it; and padded() must not wrap
    auto *base = static_cast<unsigned char *>(std::aligned_alloc(64, padded(bytes)));
    if (!base) return nullptr;
    std::memset(base, kGuardByte, kGuard);
    std::memset(base + kGuard + bytes, kGuardByte, kGuard);
    unsigned char *user = base + kGuard;
    self->blocks_[user] = bytes;
    self->live_ += static_cast<int64_t>(bytes);
    self->peak_ = std::max(self->peak_, self->live_);
    ++self->allocations_;
    return user;
}

void CountingAllocator::check_guards(unsigned char *user, size_t bytes) {
    size_t before = 0, after = 0;
    for (size_t i = 0; i < kGuard; ++i) {
        if (user[-1 - static_cast<std::ptrdiff_t>(i)] != kGuardByte) before = i + 1;
        if (user[bytes + i] != kGuardByte) after = i + 1;
    }
    if (after) violation(fmt::format("out-of-bounds write, {} bytes past an ABI allocation of {} B", after, bytes));
    if (before) violation(fmt::format("out-of-bounds write, {} bytes before an ABI allocation of {} B", before, bytes));
}

void CountingAllocator::release(void *ctx, void *ptr) {
    if (!ptr) return;
    auto *self = static_cast<CountingAllocator *>(ctx);
    const auto it = self->blocks_.find(ptr);
    if (it == self->blocks_.end()) {  // never given, or already taken back: leave it alone
        self->violation("freed a pointer the ABI allocator did not give it (or freed it twice)");
        return;
    }
    auto *user = static_cast<unsigned char *>(ptr);
    self->check_guards(user, it->second);
    self->live_ -= static_cast<int64_t>(it->second);
    ++self->frees_;
    self->blocks_.erase(it);
    std::free(user - kGuard);
}

void CountingAllocator::audit() {
    for (const auto &[user, bytes] : blocks_) check_guards(static_cast<unsigned char *>(user), bytes);
}

namespace {
/// Reads a small /proc file into buf (NUL-terminated) with plain system calls: a probe
/// that allocated would itself move the heap it measures.
bool read_proc(const char *path, char *buf, size_t size) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t used = 0;
    while (used + 1 < size) {
        const ssize_t n = ::read(fd, buf + used, size - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += static_cast<size_t>(n);
    }
    ::close(fd);
    buf[used] = '\0';
    return used > 0;
}
}  // namespace

ProcessMemory sample_process_memory() {
    ProcessMemory m;
    const struct mallinfo2 mi = ::mallinfo2();
    m.heap_bytes = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
    char buf[256];
    long long size = 0, resident = 0;
    if (read_proc("/proc/self/statm", buf, sizeof buf) && std::sscanf(buf, "%lld %lld", &size, &resident) == 2)
        m.rss_bytes = resident * ::sysconf(_SC_PAGESIZE);
    return m;
}

bool reset_peak_rss() {
    const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, "5", 1) == 1;
    return ::close(fd) == 0 && ok;
}

int64_t peak_rss_bytes() {
    char buf[4096];
    if (!read_proc("/proc/self/status", buf, sizeof buf)) return -1;
    const char *line = std::strstr(buf, "\nVmHWM:");
    long long kb = 0;
    return line && std::sscanf(line + 7, "%lld", &kb) == 1 ? kb * 1024 : -1;  // kB
}

void exec_with_exact_heap_accounting(char **argv) {
    static constexpr const char *kOff = "glibc.malloc.tcache_count=0";
    const char *tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, kOff)) return;
    const std::string value = tunables && *tunables ? std::string(tunables) + ":" + kOff : std::string(kOff);
    if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
    ::execv("/proc/self/exe", argv);
    ::unsetenv("GLIBC_TUNABLES");  // the exec failed: carry on as we are
    if (tunables) ::setenv("GLIBC_TUNABLES", tunables, 1);
}

}  // namespace attngate
