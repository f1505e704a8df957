// bfloat16 conversions: round-to-nearest-even from float32, exact widening back.
#pragma once

#include <bit>
#include <cstdint>

namespace attngate {

/// Rounds a float to the nearest bfloat16, ties to even. NaN stays NaN (quietened, sign
/// kept), infinities stay infinite, subnormals round like any other value, and finite
/// values past the largest bf16 round to infinity, as IEEE rounding requires.
inline std::uint16_t float_to_bf16(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    }
    const std::uint32_t lsb = (u >> 16) & 1u;
    return static_cast<std::uint16_t>((u + 0x7fffu + lsb) >> 16);
}

/// Widens bfloat16 bits to float (exact).
inline float bf16_to_float(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// Rounds a float to bf16 precision and back.
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

}  // namespace attngate
