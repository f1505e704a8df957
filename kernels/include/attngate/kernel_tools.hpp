// C++ entry points of the built-in kernels' machinery beyond the ABI, for the bench and
// the tests: which instruction-set path runs, what BLAS is underneath, and its sgemm.
#pragma once

#include <cstdint>
#include <string>

namespace attngate::kernels {

/// The instruction-set path the kernels take now ("portable", "avx2", "avx512",
/// "avx512bf16") and the best one this CPU runs.
std::string active_path();
std::string detected_path();

/// Caps the path (tests force "portable"); false for an unknown name. Never raises the
/// path above what the CPU runs. The environment variable ATTNGATE_KERNEL_ISA sets the
/// same cap at start-up.
bool limit_path(const std::string &name);

/// Test hook: bf16 products through the vdpbf16ps microkernels with emulated lanes, on any
/// CPU, so the AVX-512 BF16 path's packing and loops are tested where the CPU lacks it.
void use_emulated_bf16_products(bool on);

/// The BLAS of the ceiling, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ... (core Zen)".
std::string blas_description();

/// The sgemm ceiling of the bench: the two products of one attention head of length S and
/// head dim D (S = Q K^T, then O = S V, in blocks of 512 query rows), by the system BLAS
/// (Debian's OpenBLAS) on `threads` threads: the speed those products reach with no
/// softmax, masking or packing.
class SgemmCeiling {
public:
    SgemmCeiling(int threads, int64_t seq, int64_t head_dim);
    ~SgemmCeiling();
    SgemmCeiling(const SgemmCeiling &) = delete;
    SgemmCeiling &operator=(const SgemmCeiling &) = delete;
    /// One round: the head once.
    void run();
    /// FLOPs of one round: 4 S^2 D.
    double flops() const;

private:
    struct Impl;
    Impl *impl_;
};

/// CPUs this process may run on: what num_threads <= 0 means.
int default_threads();

}  // namespace attngate::kernels
