// Which instruction-set path the built-in kernels take, chosen at run time from the CPU's
// flags (the binary is built for baseline x86-64; only a few files carry wider code).
#pragma once

namespace attngate::kernels {

/// Instruction-set paths, each a superset of the one before.
enum class Isa {
    Portable = 0,   ///< plain C++ (and whatever BLAS picks for itself)
    Avx2 = 1,       ///< AVX2 + FMA: 8-lane softmax and conversions
    Avx512 = 2,     ///< AVX-512 F/BW/DQ/VL: 16 lanes
    Avx512Bf16 = 3, ///< plus AVX-512 BF16: bf16 products through vdpbf16ps
};

/// The best path this CPU runs (cpuid and the OS's saved register state).
Isa detected_isa();

/// The path the kernels take: detected_isa(), lowered to the limit when that is lower.
/// The limit starts from the environment variable ATTNGATE_KERNEL_ISA (portable, avx2,
/// avx512, avx512bf16; unset: no limit), so users can force the portable path.
Isa active_isa();

/// Sets the limit (tests compare the paths in one process). Never raises the path above
/// what the CPU runs.
void set_isa_limit(Isa isa);

/// "portable", "avx2", "avx512" or "avx512bf16".
const char *isa_name(Isa isa);

}  // namespace attngate::kernels
