// STREAM copy and triad on a fixed team of threads.
#include "run/memory_bandwidth.hpp"

#include <algorithm>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

namespace attngate {

HugeBuffer::HugeBuffer(size_t bytes) : bytes_(bytes) {
    constexpr size_t kHuge = size_t{2} << 20;
    mapped_ = (bytes + kHuge - 1) / kHuge * kHuge + kHuge;  // room to start on a 2 MiB boundary
    void *p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<unsigned char *>(p);
    ::madvise(data_, mapped_, MADV_HUGEPAGE);  // a hint: 4 KiB pages where the kernel says no
}

HugeBuffer::~HugeBuffer() { ::munmap(data_, mapped_); }

StreamBandwidth::StreamBandwidth(int threads, int64_t bytes_per_array)
    : threads_(std::max(1, threads)), n_(std::max<int64_t>(bytes_per_array / static_cast<int64_t>(sizeof(double)), threads_)),
      a_buf_(static_cast<size_t>(n_) * sizeof(double)), b_buf_(a_buf_.size()), c_buf_(a_buf_.size()),
      a_(reinterpret_cast<double *>(a_buf_.data())), b_(reinterpret_cast<double *>(b_buf_.data())),
      c_(reinterpret_cast<double *>(c_buf_.data())), start_(threads_), done_(threads_) {
    for (int w = 1; w < threads_; ++w)
        workers_.emplace_back([this, w] {
            for (;;) {
                start_.arrive_and_wait();
                const Op op = op_;
                if (op == Op::Stop) return;
                slice(w, op);
                done_.arrive_and_wait();
            }
        });
    run(Op::Init);  // each thread first touches its own slice
}

StreamBandwidth::~StreamBandwidth() {
    op_ = Op::Stop;
    start_.arrive_and_wait();
}

void StreamBandwidth::run(Op op) {
    op_ = op;  // published to the workers by the barrier
    start_.arrive_and_wait();
    slice(0, op);
    done_.arrive_and_wait();
}

void StreamBandwidth::slice(int worker, Op op) {
    const int64_t lo = n_ * worker / threads_, hi = n_ * (worker + 1) / threads_;
    double *a = a_, *b = b_, *c = c_;
    switch (op) {
    case Op::Init:
        for (int64_t i = lo; i < hi; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;
        break;
    case Op::Copy:
        for (int64_t i = lo; i < hi; ++i) a[i] = b[i];
        break;
    case Op::Triad:
        for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
        break;
    case Op::Stop: break;
    }
}

void StreamBandwidth::copy() { run(Op::Copy); }
void StreamBandwidth::triad() { run(Op::Triad); }

bool StreamBandwidth::verify_triad() const {
    for (int64_t i = 0; i < n_; i += std::max<int64_t>(1, n_ / 4096))
        if (a_[i] != b_[i] + 3.0 * c_[i]) return false;
    return true;
}

int64_t stream_array_bytes(int64_t llc_bytes) {
    return std::clamp<int64_t>(4 * llc_bytes, int64_t{64} << 20, int64_t{1} << 30);
}

int64_t last_level_cache_bytes() {
    for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
        if (const long v = ::sysconf(name); v > 0) return v;
    return 0;
}

}  // namespace attngate
