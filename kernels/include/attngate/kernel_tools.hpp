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

/// How flash multiplies bf16 tiles. Measured (the default): vdpbf16ps where the CPU has
/// AVX-512 BF16 and retires the instruction's FLOPs faster than f32 FMA's (measured once per
/// process), else the operands widened to f32 (exact) and the f32 FMA microkernels. Both
/// take bf16 operands and accumulate in f32, the MXU's contract; their bits differ by
/// rounding order only. ATTNGATE_BF16_PRODUCTS=vdpbf16ps|widened forces one at start-up.
/// Emulated is a test hook: the vdpbf16ps microkernels on plain C++ lanes, on any CPU.
enum class Bf16Products { Measured, Vdpbf16ps, Widened, Emulated };
void set_bf16_products(Bf16Products how);

/// What flash's bf16 products run on now, and why: for the bench's header.
std::string bf16_products();

/// CPUs this process may run on: what num_threads <= 0 means.
int default_threads();

}  // namespace attngate::kernels
