// The kernels' C++ tools for the bench and tests (attngate/kernel_tools.hpp).
#include "attngate/kernel_tools.hpp"

#include <algorithm>
#include <vector>

#include <cblas.h>

#include "cpu_dispatch.hpp"
#include "thread_pool.hpp"

namespace attngate::kernels {

std::string active_path() { return isa_name(active_isa()); }
std::string detected_path() { return isa_name(detected_isa()); }

bool limit_path(const std::string &name) {
    for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
        if (name == isa_name(isa)) {
            set_isa_limit(isa);
            return true;
        }
    return false;
}

// Debian's OpenBLAS (pthread build): the reference speed of the machine for these products,
// the figure the bench compares the kernels against. The kernels themselves do not call it:
// its thread count is process-wide and its pool is re-spawned after every fork (the memory
// gate would see that), and the serial build is not safe to call from several threads.
struct SgemmCeiling::Impl {
    Impl(int t, int64_t seq, int64_t head_dim)
        : threads(t), s(seq), d(head_dim), rows(std::min<int64_t>(seq, 512)), q(static_cast<size_t>(s * d), 0.5f),
          k(q.size(), 0.25f), v(q.size(), 0.125f), scores(static_cast<size_t>(rows * s), 0.0f), out(q.size(), 0.0f) {}
    int threads;
    int64_t s, d, rows;
    std::vector<float> q, k, v, scores, out;
};

SgemmCeiling::SgemmCeiling(int threads, int64_t seq, int64_t head_dim) : impl_(new Impl(std::max(threads, 1), seq, head_dim)) {}

SgemmCeiling::~SgemmCeiling() { delete impl_; }

void SgemmCeiling::run() {
    Impl &m = *impl_;
    openblas_set_num_threads(m.threads);
    const auto s = static_cast<blasint>(m.s), d = static_cast<blasint>(m.d);
    for (int64_t r0 = 0; r0 < m.s; r0 += m.rows) {
        const auto rows = static_cast<blasint>(std::min(m.rows, m.s - r0));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, s, d, 1.0f, m.q.data() + r0 * m.d, d, m.k.data(), d, 0.0f,
                    m.scores.data(), s);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, s, 1.0f, m.scores.data(), s, m.v.data(), d, 0.0f,
                    m.out.data() + r0 * m.d, d);
    }
}

double SgemmCeiling::flops() const {
    const double s = static_cast<double>(impl_->s), d = static_cast<double>(impl_->d);
    return 4.0 * s * s * d;
}

std::string blas_description() {
    std::string s = openblas_get_config();
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + " (core " + openblas_get_corename() + ")";
}

int default_threads() { return available_cpus(); }

}  // namespace attngate::kernels
