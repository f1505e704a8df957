// The bench's yardstick: the two products of one attention head by the system BLAS
// (Debian's OpenBLAS), loaded with dlopen only when the bench runs. Linked in, OpenBLAS's
// pthread build would start its threads in every attngate process and re-spawn them in
// every forked kernel child, which the memory gate sees; the kernels themselves never
// call it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/error.hpp"

namespace attngate {

class SgemmCeiling {
public:
    /// S = Q K^T, then O = S V for one head of length `seq` and head dim `head_dim`, in
    /// blocks of 512 query rows, on `threads` threads. An error when no BLAS can be loaded.
    static Result<std::unique_ptr<SgemmCeiling>> make(int threads, int64_t seq, int64_t head_dim);
    ~SgemmCeiling();
    SgemmCeiling(const SgemmCeiling &) = delete;
    SgemmCeiling &operator=(const SgemmCeiling &) = delete;

    /// One round: the head once.
    void run();
    /// FLOPs of one round: 4 S^2 D.
    double flops() const;

private:
    SgemmCeiling() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// "OpenBLAS 0.3.21 DYNAMIC_ARCH ... (core Zen)", or why no BLAS could be loaded.
std::string blas_description();

}  // namespace attngate
