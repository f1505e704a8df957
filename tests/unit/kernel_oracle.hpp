// The fp64 oracle and the gate's tolerance for kernel unit tests: run a built-in kernel,
// the reference, and calibrate the golden entry exactly as golden generation does.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "attngate/builtin_kernels.hpp"
#include "attngate/kernel_tools.hpp"
#include "backend/kernel_registry.hpp"
#include "checks/golden_check.hpp"
#include "run/golden_generate.hpp"
#include "store/golden.hpp"
#include "plan/inputs.hpp"
#include "backend/memory.hpp"

namespace attngate::test {

inline Suite kernel_test_suite() {
    Suite s;
    s.name = "unit";
    s.seed = 99;
    return s;
}

inline std::vector<double> run_reference(const CaseSpec &c, const CaseInputs &in) {
    std::vector<double> out(static_cast<size_t>(output_elements(c)));
    std::vector<float> unused(out.size());
    CountingAllocator alloc;
    const attngate_problem p = make_problem(c, in, unused.data(), alloc.abi());
    char err[256] = {0};
    REQUIRE(kernels::reference_forward_f64(p, out.data(), err, sizeof err) == 0);
    return out;
}

/// The gate's tolerance for this case, computed exactly as golden generation does.
inline GoldenEntry calibrate(const CaseSpec &c, const CaseInputs &in, const std::vector<double> &ref) {
    std::vector<float> sf(ref.size());
    CountingAllocator alloc;
    const attngate_problem p = make_problem(c, in, sf.data(), alloc.abi());
    char err[256] = {0};
    REQUIRE(kernels::straightforward_forward(p, err, sizeof err) == 0);
    GoldenEntry g;
    g.shape = output_shape(c);
    calibrate_golden(g, ref, sf);
    return g;
}

/// Puts the kernels on one instruction-set path for a scope.
class PathScope {
public:
    explicit PathScope(const std::string &path) { REQUIRE(kernels::limit_path(path)); }
    ~PathScope() { kernels::limit_path("avx512bf16"); }  // no cap: the CPU's best
};

/// A built-in kernel by name.
inline const attngate_kernel *kernel(const char *name) {
    static const KernelRegistry reg = KernelRegistry::with_builtins();
    const attngate_kernel *k = reg.find(name);
    REQUIRE(k);
    return k;
}

/// A kernel instance from init with a thread count (<= 0: every CPU), freed on scope exit.
/// A kernel without init has none: it runs in the caller's thread.
class Instance {
public:
    Instance(const attngate_kernel *k, int threads) : k_(k) {
        if (!k->init) return;
        const attngate_kernel_params params{threads, nullptr};
        char err[128] = {0};
        handle_ = k->init(k, &params, err, sizeof err);
        REQUIRE(handle_);
    }
    ~Instance() {
        if (handle_) k_->free(k_, handle_);
    }
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;
    void *get() const { return handle_; }

private:
    const attngate_kernel *k_;
    void *handle_ = nullptr;
};

}  // namespace attngate::test
