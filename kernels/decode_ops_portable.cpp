// The flash-decode products in plain C++ (one lane), and the path dispatch.
#include <algorithm>
#include <cstdint>

#include "attngate/bf16.hpp"
#include "decode_ops.hpp"

namespace attngate::kernels {
namespace {

struct PortableDecode {
    using F = float;
    static constexpr int64_t N = 1, kRows = 1, kPvChunks = 1;
    static F zero() { return 0.0f; }
    static F load(const float *p) { return *p; }
    static F load_n(const float *p, int64_t n) { return n > 0 ? *p : 0.0f; }
    static void store(float *p, F v) { *p = v; }
    static F set1(float x) { return x; }
    static F fma(F a, F b, F c) { return a * b + c; }
    static void widen_pair(const uint16_t *p, int64_t valid, F &even, F &odd) {
        even = bf16_to_float(p[0]);
        odd = valid > 1 ? bf16_to_float(p[1]) : 0.0f;
    }
    static void reduce(const F *acc, float *out) { out[0] = acc[0]; }
};

#include "decode_ops.inc"

}  // namespace

const DecodeOps &decode_ops_portable() { return DecodeKernels<PortableDecode>::table(); }

const DecodeOps &decode_ops(Isa isa) {
    if (isa >= Isa::Avx512) return decode_ops_avx512();
    if (isa >= Isa::Avx2) return decode_ops_avx2();
    return decode_ops_portable();
}

}  // namespace attngate::kernels
