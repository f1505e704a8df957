// OpenBLAS through dlopen: cblas_sgemm and its thread count, for the bench only.
#include "run/sgemm_ceiling.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <dlfcn.h>

namespace attngate {

namespace {

#ifndef ATTNGATE_OPENBLAS_PATH
#define ATTNGATE_OPENBLAS_PATH "libopenblas.so.0"
#endif

// The CBLAS enum values, fixed by the CBLAS standard.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

/// The OpenBLAS core type for this CPU's vector extensions. OpenBLAS picks its kernels
/// from the CPU model, and a model newer than the build falls back to its generic kernels:
/// Debian's 0.3.21 runs SSE3 code ("Prescott", 31 GFLOP/s on one core) on the Xeon with
/// AVX-512 BF16 it does not know, instead of its Cooper Lake kernels (137 GFLOP/s). A
/// ceiling must be the BLAS at its best, so the flags decide; null leaves it to OpenBLAS.
const char *core_type_for_flags() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return nullptr;
}

struct Blas {
    void *handle = nullptr;
    std::string error;
    std::string core_source = "detected by OpenBLAS";
    void (*sgemm)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int) = nullptr;
    void (*set_threads)(int) = nullptr;
    char *(*config)() = nullptr;
    char *(*corename)() = nullptr;

    Blas() {
        // OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded; the user's setting wins.
        if (const char *set = std::getenv("OPENBLAS_CORETYPE"); set && *set) {
            core_source = "OPENBLAS_CORETYPE as set";
        } else if (const char *core = core_type_for_flags()) {
            ::setenv("OPENBLAS_CORETYPE", core, 0);
            core_source = "chosen from the CPU's flags";
        }
        for (const char *path : {ATTNGATE_OPENBLAS_PATH, "libopenblas.so.0"}) {
            handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (handle) break;
            error = ::dlerror();
        }
        if (!handle) return;
        sgemm = reinterpret_cast<decltype(sgemm)>(::dlsym(handle, "cblas_sgemm"));
        set_threads = reinterpret_cast<decltype(set_threads)>(::dlsym(handle, "openblas_set_num_threads"));
        config = reinterpret_cast<decltype(config)>(::dlsym(handle, "openblas_get_config"));
        corename = reinterpret_cast<decltype(corename)>(::dlsym(handle, "openblas_get_corename"));
        if (!sgemm || !set_threads) error = "the loaded library has no cblas_sgemm or openblas_set_num_threads";
    }
    bool ok() const { return handle && sgemm && set_threads; }
};

/// Loaded on first use and kept for the life of the process (as a linked library would be).
Blas &blas() {
    static Blas b;
    return b;
}

}  // namespace

struct SgemmCeiling::Impl {
    int threads = 1;
    int64_t s = 0, d = 0, rows = 0;
    std::vector<float> q, k, v, scores, out;
};

Result<std::unique_ptr<SgemmCeiling>> SgemmCeiling::make(int threads, int64_t seq, int64_t head_dim) {
    if (!blas().ok()) return fail(ErrorKind::Infra, "no BLAS for the sgemm ceiling: {}", blas().error);
    std::unique_ptr<SgemmCeiling> c(new SgemmCeiling);
    c->impl_ = std::make_unique<Impl>();
    Impl &m = *c->impl_;
    m.threads = std::max(threads, 1);
    m.s = seq;
    m.d = head_dim;
    m.rows = std::min<int64_t>(seq, 512);
    m.q.assign(static_cast<size_t>(seq * head_dim), 0.5f);
    m.k.assign(m.q.size(), 0.25f);
    m.v.assign(m.q.size(), 0.125f);
    m.scores.assign(static_cast<size_t>(m.rows * seq), 0.0f);
    m.out.assign(m.q.size(), 0.0f);
    return c;
}

SgemmCeiling::~SgemmCeiling() = default;

void SgemmCeiling::run() {
    Impl &m = *impl_;
    Blas &b = blas();
    b.set_threads(m.threads);
    const int s = static_cast<int>(m.s), d = static_cast<int>(m.d);
    for (int64_t r0 = 0; r0 < m.s; r0 += m.rows) {
        const int rows = static_cast<int>(std::min(m.rows, m.s - r0));
        b.sgemm(kRowMajor, kNoTrans, kTrans, rows, s, d, 1.0f, m.q.data() + r0 * m.d, d, m.k.data(), d, 0.0f, m.scores.data(), s);
        b.sgemm(kRowMajor, kNoTrans, kNoTrans, rows, d, s, 1.0f, m.scores.data(), s, m.v.data(), d, 0.0f, m.out.data() + r0 * m.d, d);
    }
}

double SgemmCeiling::flops() const {
    const double s = static_cast<double>(impl_->s), d = static_cast<double>(impl_->d);
    return 4.0 * s * s * d;
}

std::string blas_description() {
    Blas &b = blas();
    if (!b.ok()) return "unavailable (" + b.error + ")";
    std::string s = b.config ? b.config() : "OpenBLAS";
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return b.corename ? s + " (core " + b.corename() + ", " + b.core_source + ")" : s;
}

}  // namespace attngate
