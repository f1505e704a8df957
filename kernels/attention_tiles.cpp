// The fast kernels' shared machinery: instance lifetime, tile classification, scores.
#include "attention_tiles.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "attngate/kernel_tools.hpp"
#include "bf16_pairs.hpp"

namespace attngate::kernels {

void *instance_init(const attngate_kernel *, const attngate_kernel_params *params, char *err, size_t err_len) {
    const int asked = params ? params->num_threads : 0;
    const int threads = asked > 0 ? asked : available_cpus();
    auto *instance = new (std::nothrow) KernelInstance(threads);
    if (!instance) fail(err, err_len, "could not create a kernel instance with %d threads", threads);
    return instance;
}

void instance_free(const attngate_kernel *, void *instance) { delete static_cast<KernelInstance *>(instance); }

TileMask classify_tile(const ProblemView &view, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
    int64_t lo_first, hi_first, lo_last, hi_last;
    view.key_range(q0, lo_first, hi_first);
    view.key_range(q1 - 1, lo_last, hi_last);
    // Key ranges move right monotonically with the row: the tile's keys are covered by
    // [lo of the first row, hi of the last row), and every row keeps all of them when the
    // last row's lo and the first row's hi enclose the tile.
    if (k1 <= lo_first || k0 >= hi_last) return TileMask::Skip;
    const attngate_problem &p = view.problem();
    if (!p.segment_ids_q) return lo_last <= k0 && hi_first >= k1 ? TileMask::Full : TileMask::Partial;
    for (int64_t i = q0; i < q1; ++i)
        for (int64_t j = k0; j < k1; ++j)
            if (view.allowed(b, i, j)) return TileMask::Partial;
    return TileMask::Skip;
}

void finish_row(const ProblemView &view, const RowOps &ops, float *s, int64_t b, int64_t h, int64_t i, int64_t k0,
                int64_t n, bool partial) {
    const attngate_problem &p = view.problem();
    const float *bias = view.bias_row(b, h, i);
    const int64_t bstride = view.bias_key_stride();
    ops.finish(s, n, p.scale, p.softcap, bias ? bias + k0 * bstride : nullptr, bstride);
    if (!partial) return;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    int64_t lo, hi;
    view.key_range(i, lo, hi);
    lo = std::clamp<int64_t>(lo - k0, 0, n);
    hi = std::clamp<int64_t>(hi - k0, lo, n);
    std::fill(s, s + lo, kNegInf);
    std::fill(s + hi, s + n, kNegInf);
    if (p.segment_ids_q) {
        const int32_t seg = p.segment_ids_q[b * p.seq_q + i];
        const int32_t *kv = p.segment_ids_kv + b * p.seq_k + k0;
        for (int64_t j = lo; j < hi; ++j)
            if (kv[j] != seg) s[j] = kNegInf;
    }
}

Rows operand_rows(const void *tensor, attngate_dtype dtype, int64_t first, int64_t rows, int64_t dim, int64_t stride,
                  float *buf, const RowOps &ops) {
    if (dtype == ATTNGATE_DTYPE_F32) return {static_cast<const float *>(tensor) + first, stride};
    const auto *src = static_cast<const uint16_t *>(tensor) + first;
    for (int64_t r = 0; r < rows; ++r) ops.widen_bf16(src + r * stride, dim, buf + r * dim);
    return {buf, dim};
}

const RowOps &active_row_ops() { return row_ops(active_isa()); }

namespace {

/// vdpbf16ps is taken when it retires at least this many times the FLOPs of f32 FMA:
/// far from both ratios seen (0.48 on the Xeon measured, 2 where it runs at the FMA's
/// instruction rate), so the choice does not flip with noise.
constexpr double kVdpbf16psPays = 1.2;

Bf16Products products_from_env() {
    const char *v = std::getenv("ATTNGATE_BF16_PRODUCTS");
    if (v && std::strcmp(v, "vdpbf16ps") == 0) return Bf16Products::Vdpbf16ps;
    if (v && std::strcmp(v, "widened") == 0) return Bf16Products::Widened;
    return Bf16Products::Measured;  // unset or unknown: the measured choice
}

std::atomic<int> &products_mode() {
    static std::atomic<int> m{static_cast<int>(products_from_env())};
    return m;
}

/// Measured once per process, and only on a CPU that has the instruction.
double flop_ratio() {
    static const double r = vdpbf16ps_flop_ratio();
    return r;
}

}  // namespace

void set_bf16_products(Bf16Products how) { products_mode().store(static_cast<int>(how), std::memory_order_relaxed); }

const PairGemm *active_pair_gemm() {
    const auto how = static_cast<Bf16Products>(products_mode().load(std::memory_order_relaxed));
    if (how == Bf16Products::Emulated) return &pair_gemm_emulated();
    if (how == Bf16Products::Widened || active_isa() < Isa::Avx512Bf16) return nullptr;
    if (how == Bf16Products::Vdpbf16ps || flop_ratio() >= kVdpbf16psPays) return &pair_gemm_avx512bf16();
    return nullptr;
}

std::string bf16_products() {
    const auto how = static_cast<Bf16Products>(products_mode().load(std::memory_order_relaxed));
    if (how == Bf16Products::Emulated) return "vdpbf16ps microkernels on emulated lanes (test hook)";
    if (how == Bf16Products::Widened) return "widened to f32, f32 FMA (ATTNGATE_BF16_PRODUCTS=widened)";
    if (active_isa() < Isa::Avx512Bf16) return "widened to f32, f32 FMA (no AVX-512 BF16 on this path)";
    char measured[96];
    std::snprintf(measured, sizeof measured, "vdpbf16ps retires %.2fx the FLOPs of f32 FMA here", flop_ratio());
    if (how == Bf16Products::Vdpbf16ps) return std::string("vdpbf16ps (ATTNGATE_BF16_PRODUCTS=vdpbf16ps; ") + measured + ")";
    if (active_pair_gemm()) return std::string("vdpbf16ps (") + measured + ")";
    char why[64];
    std::snprintf(why, sizeof why, "; it is used at %.1fx or more)", kVdpbf16psPays);
    return std::string("widened to f32, f32 FMA (") + measured + why;
}

}  // namespace attngate::kernels
