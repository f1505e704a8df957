// Overflow-safe arithmetic for sizes that come from input files (suite dimensions, .npy
// shapes): a hostile size saturates at INT64_MAX and then fails a limit check, never wraps.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace attngate {

inline constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

/// a * b for non-negative a and b, or kSaturated when it does not fit.
constexpr int64_t saturating_mul(int64_t a, int64_t b) {
    int64_t r = 0;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return kSaturated;
    return r;
}

/// a + b for non-negative a and b, or kSaturated when it does not fit.
constexpr int64_t saturating_add(int64_t a, int64_t b) {
    int64_t r = 0;
    if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return kSaturated;
    return r;
}

/// The product of non-negative xs, or kSaturated when it does not fit.
constexpr int64_t saturating_product(std::initializer_list<int64_t> xs) {
    int64_t p = 1;
    for (int64_t x : xs) p = saturating_mul(p, x);
    return p;
}

}  // namespace attngate
