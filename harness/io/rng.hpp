// Counter-based random numbers: element n of a stream is a pure function of
// (seed, stream, n), computed with integer arithmetic only, so every compiler, standard
// library and platform produces the same bits (std:: distributions do not).
#pragma once

#include <cstdint>
#include <string_view>

namespace attngate {

/// Bump when the generator or the way inputs are drawn changes; goldens record it.
inline constexpr int kGeneratorVersion = 1;

/// Output n (0-based) of SplitMix64 started from `seed`: mix(seed + (n + 1) * golden gamma).
constexpr uint64_t splitmix64_at(uint64_t seed, uint64_t n) {
    uint64_t z = seed + (n + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// FNV-1a 64-bit hash of a name, to derive stream keys.
constexpr uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

/// One named stream of a seed.
class CounterRng {
public:
    constexpr CounterRng(uint64_t seed, std::string_view stream)
        : key_(splitmix64_at(seed, fnv1a64(stream))) {}

    constexpr uint64_t bits(uint64_t n) const { return splitmix64_at(key_, n); }

    /// Uniform on [-1, 1) with 24-bit resolution; exact in float32.
    constexpr float uniform(uint64_t n) const {
        const int64_t r = static_cast<int64_t>(bits(n) >> 40) - (int64_t{1} << 23);
        return static_cast<float>(r) / static_cast<float>(1 << 23);
    }

    /// Uniform on [0, 1) with 24-bit resolution.
    constexpr float unit(uint64_t n) const {
        return static_cast<float>(bits(n) >> 40) / static_cast<float>(1 << 24);
    }

private:
    uint64_t key_;
};

}  // namespace attngate
