// C++ entry points of the built-in kernels' machinery beyond the ABI, for the bench and
// the tests: which instruction-set path runs and how many CPUs the kernels use.
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

/// CPUs this process may run on: what num_threads <= 0 means.
int default_threads();

}  // namespace attngate::kernels
