// STREAM copy and triad on a fixed team of threads.
#include "run/memory_bandwidth.hpp"

#include <algorithm>
#include <unistd.h>

namespace attngate {

StreamBandwidth::StreamBandwidth(int threads, int64_t bytes_per_array)
    : threads_(std::max(1, threads)), n_(std::max<int64_t>(bytes_per_array / static_cast<int64_t>(sizeof(double)), threads_)),
      a_(new double[static_cast<size_t>(n_)]), b_(new double[static_cast<size_t>(n_)]), c_(new double[static_cast<size_t>(n_)]),
      start_(threads_), done_(threads_) {
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
    double *a = a_.get(), *b = b_.get(), *c = c_.get();
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
        if (a_[static_cast<size_t>(i)] != b_[static_cast<size_t>(i)] + 3.0 * c_[static_cast<size_t>(i)]) return false;
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
