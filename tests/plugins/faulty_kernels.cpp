// Deliberately faulty kernels, loaded as a plugin by the tests to prove that the gate
// sees each kind of drift. Never part of the default kernel list.
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <unistd.h>

#include "attention_common.hpp"
#include "builtin_lookup.hpp"
#include "numeric_faults.hpp"
#include "paged_faults.hpp"

namespace {

using attngate::kernels::ProblemView;

enum Fault : int {
    kCausalOffByOneLastBlock = 1,  // the last 128-key block lets row i see key i+1
    kNoMaxSubtraction = 2,         // exp(s) without subtracting the row max: overflows
    kNanToZero = 3,                // NaN scores silently treated as masked
    kZeroWeightMask = 4,           // a masked key gets weight 0 but stays in P·V: 0 * NaN in V is NaN
};

/// Straightforward f32 attention with one fault switched on.
int faulty_run(const attngate_kernel *self, const attngate_problem *pp, char *err, size_t n) {
    const attngate_problem &p = *pp;
    const Fault fault = static_cast<Fault>(reinterpret_cast<intptr_t>(self->user));
    const ProblemView view(p);
    attngate::kernels::WidenedOperands ops(p);
    if (!ops.ok()) return attngate::kernels::fail(err, n, "workspace allocation failed");
    const int64_t last_block = ((p.seq_k - 1) / 128) * 128;
    std::vector<float> s(static_cast<size_t>(p.seq_k));
    std::vector<char> keep(static_cast<size_t>(p.seq_k));
    for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads_q; ++h)
            for (int64_t i = 0; i < p.seq_q; ++i) {
                const float *q = ops.q.data() + view.q_index(b, i, h);
                const int64_t hk = view.kv_head(h);
                float m = -std::numeric_limits<float>::infinity();
                bool any = false;
                for (int64_t j = 0; j < p.seq_k; ++j) {
                    bool ok = view.allowed(b, i, j);
                    if (fault == kCausalOffByOneLastBlock && p.causal && j >= last_block && j == view.aligned_position(i) + 1)
                        ok = true;
                    keep[j] = ok || fault == kZeroWeightMask;
                    s[j] = -std::numeric_limits<float>::infinity();  // exp() of it: the zero weight
                    if (!ok) continue;
                    s[j] = view.finish_score(attngate::kernels::dot_f32(q, ops.k.data() + view.k_index(b, j, hk), p.head_dim), b, h, i, j);
                    if (fault == kNanToZero && std::isnan(s[j])) {
                        keep[j] = 0;
                        continue;
                    }
                    any = true;
                    m = std::max(m, s[j]);
                }
                if (fault == kNoMaxSubtraction) m = 0.0f;
                float *out = p.out + view.out_index(b, i, h);
                float l = 0.0f;
                for (int64_t j = 0; j < p.seq_k; ++j)
                    if (keep[j]) l += (s[j] = std::exp(s[j] - m));
                for (int64_t d = 0; d < p.head_dim_v; ++d) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < p.seq_k; ++j)
                        if (keep[j]) acc += s[j] * ops.v.data()[view.v_index(b, j, hk) + d];
                    out[d] = any ? acc / l : 0.0f;
                }
            }
    return 0;
}

constexpr uint32_t kF32Features = ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_BF16;

// --- memory and robustness faults: correct output (the built-in flash kernel), wrong
// --- behaviour around it, so only the memory gate or isolation can see them.

enum MemoryFault : int {
    kLeak4KiB = 1,       // keeps 4 KiB per call with malloc, outside the ABI allocator
    kLeak64 = 2,         // keeps 64 bytes per call
    kLeakAbi = 3,        // forgets to free one ABI allocation per call
    kBloated = 4,        // a flash kernel that allocates an Sq x Sk scratch
    kCrashOn77 = 5,      // SIGSEGV when seq_q == 77
    kHangOn33 = 6,       // never returns when seq_q == 33
    kLeakTiny = 100,     // 100 + n: keeps n bytes per call (detection-limit benchmark)
};

const attngate_kernel &builtin_flash() { return attngate::test_plugins::builtin("flash"); }

std::vector<void *> &kept() {
    static std::vector<void *> blocks;
    return blocks;
}

void keep_bytes(size_t n) {
    void *p = std::malloc(n);
    std::memset(p, 0xab, n);
    kept().push_back(p);
}

int memory_fault_run(const attngate_kernel *self, const attngate_problem *p, char *err, size_t n) {
    const int fault = static_cast<int>(reinterpret_cast<intptr_t>(self->user));
    const attngate_kernel &flash = builtin_flash();
    if (fault == kCrashOn77 && p->seq_q == 77) {
        std::fprintf(stderr, "crashy: seq_q is 77, dereferencing a dangling pointer\n");
        std::raise(SIGSEGV);
    }
    if (fault == kHangOn33 && p->seq_q == 33) {
        std::fprintf(stderr, "hangy: seq_q is 33, waiting forever\n");
        for (;;) ::pause();
    }
    if (fault == kLeak4KiB) keep_bytes(4096);
    if (fault == kLeak64) keep_bytes(64);
    if (fault > kLeakTiny) keep_bytes(static_cast<size_t>(fault - kLeakTiny));
    if (fault == kLeakAbi) {
        void *lost = p->allocator->alloc(p->allocator->ctx, 256);
        std::memset(lost, 0, 256);
    }
    void *scratch = nullptr;
    if (fault == kBloated) {
        const size_t bytes = sizeof(float) * static_cast<size_t>(p->seq_q * p->seq_k);
        scratch = p->allocator->alloc(p->allocator->ctx, bytes);
        if (!scratch) return attngate::kernels::fail(err, n, "scratch allocation failed");
        std::memset(scratch, 0, bytes);
    }
    const int rc = flash.run(&flash, p, err, n);
    p->allocator->free(p->allocator->ctx, scratch);
    return rc;
}

/// Spin-loop iterations per dense attention FLOP of the work-based slowdown: about what
/// flash executes per FLOP on this project's runners under callgrind, so that a PCT there
/// adds roughly PCT percent of instructions (tests/bench/gate_accuracy.py prints the
/// increase it actually measured per case).
constexpr double kSpinPerFlop = 0.05;

/// Flash plus extra work worth ATTNGATE_TEST_SLOWDOWN_PCT percent of its own time: the
/// injected slowdown of the gate-accuracy benchmark and the perf tests. With
/// ATTNGATE_TEST_SLOWDOWN_WORK=1 the extra work is a fixed number of loop iterations
/// proportional to the case's FLOPs instead: the same every call and in every process,
/// whatever the machine's speed, which is what an instruction count can see.
int slowdown_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {
    static const double pct = [] {
        const char *v = std::getenv("ATTNGATE_TEST_SLOWDOWN_PCT");
        return v ? std::atof(v) : 0.0;
    }();
    static const bool by_work = [] {
        const char *v = std::getenv("ATTNGATE_TEST_SLOWDOWN_WORK");
        return v && std::atoi(v) != 0;
    }();
    // ATTNGATE_TEST_SLOWDOWN_SEQ_Q and _HEADS_Q: only the cases of that seq_q (and that
    // heads_q) are slowed (one row of a run).
    static const auto only = [](const char *name) {
        const char *v = std::getenv(name);
        return v ? std::atoll(v) : int64_t{-1};
    };
    static const int64_t only_seq_q = only("ATTNGATE_TEST_SLOWDOWN_SEQ_Q"), only_heads_q = only("ATTNGATE_TEST_SLOWDOWN_HEADS_Q");
    const attngate_kernel &flash = builtin_flash();
    if ((only_seq_q >= 0 && p->seq_q != only_seq_q) || (only_heads_q >= 0 && p->heads_q != only_heads_q))
        return flash.run(&flash, p, err, n);
    if (by_work) {
        const int rc = flash.run(&flash, p, err, n);
        const double flops = 4.0 * static_cast<double>(p->batch * p->heads_q * p->seq_q * p->seq_k * p->head_dim);
        const auto iterations = static_cast<uint64_t>(pct / 100.0 * flops * kSpinPerFlop);
        volatile uint64_t spin = 0;
        for (uint64_t i = 0; i < iterations; ++i) spin = spin + 1;
        return rc;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = flash.run(&flash, p, err, n);
    const auto took = std::chrono::steady_clock::now() - t0;
    const auto until = std::chrono::steady_clock::now() + took * (pct / 100.0);
    volatile uint64_t spin = 0;
    while (std::chrono::steady_clock::now() < until) spin = spin + 1;
    return rc;
}

#define MEMORY_FAULT(name, what, fault)                                                                 \
    {ATTNGATE_API_VERSION, name, "0.0.1", what, ATTNGATE_FEATURE_ALL, ATTNGATE_WORKSPACE_CONSTANT, nullptr, \
     memory_fault_run, reinterpret_cast<void *>(fault), nullptr, nullptr}

const attngate_kernel kFaulty[] = {
    {ATTNGATE_API_VERSION, "causal_off_by_one", "0.0.1", "causal mask off by one on the last key block",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kCausalOffByOneLastBlock), nullptr, nullptr},
    {ATTNGATE_API_VERSION, "softmax_no_max", "0.0.1", "softmax without max subtraction (overflows on large logits)",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kNoMaxSubtraction), nullptr, nullptr},
    {ATTNGATE_API_VERSION, "nan_to_zero", "0.0.1", "drops NaN scores as if masked",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kNanToZero), nullptr, nullptr},
    {ATTNGATE_API_VERSION, "zero_weight_mask", "0.0.1", "masks a key with a zero weight, so a NaN in V at a masked key reaches the row",
     kF32Features, ATTNGATE_WORKSPACE_UNSPECIFIED, nullptr, faulty_run, reinterpret_cast<void *>(kZeroWeightMask), nullptr, nullptr},
    MEMORY_FAULT("leaky", "flash that keeps 4 KiB per call with malloc", kLeak4KiB),
    MEMORY_FAULT("leaky-slow", "flash that keeps 64 bytes per call with malloc", kLeak64),
    MEMORY_FAULT("leaky-abi", "flash that forgets to free one ABI allocation per call", kLeakAbi),
    MEMORY_FAULT("bloated", "flash that allocates an Sq x Sk scratch", kBloated),
    MEMORY_FAULT("crashy", "flash that segfaults when seq_q == 77", kCrashOn77),
    MEMORY_FAULT("hangy", "flash that never returns when seq_q == 33", kHangOn33),
    {ATTNGATE_API_VERSION, "flash-slowdown", "0.0.1", "flash plus ATTNGATE_TEST_SLOWDOWN_PCT percent extra work",
     ATTNGATE_FEATURE_ALL, ATTNGATE_WORKSPACE_CONSTANT, nullptr, slowdown_run, nullptr, nullptr, nullptr},
    MEMORY_FAULT("leak-1", "flash that keeps 1 byte per call", kLeakTiny + 1),
    MEMORY_FAULT("leak-2", "flash that keeps 2 bytes per call", kLeakTiny + 2),
    MEMORY_FAULT("leak-4", "flash that keeps 4 bytes per call", kLeakTiny + 4),
    MEMORY_FAULT("leak-8", "flash that keeps 8 bytes per call", kLeakTiny + 8),
    MEMORY_FAULT("leak-16", "flash that keeps 16 bytes per call", kLeakTiny + 16),
};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    static const std::vector<attngate_kernel> all = [] {
        std::vector<attngate_kernel> v(std::begin(kFaulty), std::end(kFaulty));
        const auto numeric = numeric_fault_kernels();
        v.insert(v.end(), numeric.begin(), numeric.end());
        const auto paged = paged_fault_kernels();
        v.insert(v.end(), paged.begin(), paged.end());
        return v;
    }();
    *count = all.size();
    return all.data();
}
