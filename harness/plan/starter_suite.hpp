// A team's first suite, made from what its kernels declare: small cases that, pairwise,
// cover every pair of features the kernels declare, as `suite coverage` counts them.
#pragma once

#include <string>
#include <vector>

#include "io/error.hpp"
#include "plan/coverage.hpp"
#include "plan/kernel_info.hpp"

namespace attngate {

/// A starter suite: its file's text and its coverage for the kernels it was made for.
struct StarterSuite {
    std::string text;
    size_t cases = 0;
    Coverage coverage;  ///< complete for each kernel: no pair missing_for_some_kernel()
};

/// A suite named `name` for `kernels` (each runs every case its declared features allow):
/// one case per line, each small enough (at most 3 x 256 keys x 4 heads x 32) that its
/// golden takes milliseconds. Its coverage is checked complete for each kernel (every pair
/// it declares meets in a case it runs) before it is returned. Bad input when a kernel declares no operand dtype, so no case could run it.
Result<StarterSuite> starter_suite(const std::string &name, const std::vector<const KernelInfo *> &kernels);

}  // namespace attngate
