// The fp64 oracle and the gate's tolerance for kernel unit tests: run a built-in kernel,
// the reference, and calibrate the golden entry exactly as golden generation does.
#pragma once

#include <vector>

#include <catch2/catch.hpp>

#include "attngate/builtin_kernels.hpp"
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

}  // namespace attngate::test
