// The golden check: a kernel's output against the fp64 golden, with a tolerance that
// scales with the dtype and the problem (see README, "Tolerance rule").
#pragma once

#include <span>
#include <vector>

#include "attngate/kernel_abi.h"
#include "store/golden.hpp"
#include "results/results.hpp"

namespace attngate {

struct OutputErrors {
    double max_abs = 0.0;
    double max_rel = 0.0;  ///< over elements with |golden| >= 1e-3 * max |golden|
    double rms = 0.0;
    double nmse = 0.0;     ///< sum d^2 / sum golden^2
    int64_t worst_index = -1;
    double worst_got = 0.0, worst_want = 0.0;
    int64_t new_nonfinite = 0;  ///< NaN or inf where the golden is finite
    int64_t dropped_nan = 0;    ///< finite where the golden is NaN
    int64_t first_nonfinite_index = -1;
    int64_t first_dropped_nan_index = -1;
};

OutputErrors measure_errors(std::span<const float> got, std::span<const double> want);

/// Max abs error binned over sequence position x value head dimension (max over batch
/// and heads), at most max_rows x max_cols bins: the report's heatmap, so drift confined
/// to the last block or to long positions is visible at a glance.
json::object error_map(std::span<const float> got, std::span<const double> want, std::span<const int64_t> shape,
                       int64_t max_rows = 32, int64_t max_cols = 16);

/// 2 x the straightforward implementation's error + 2 ulp of the dtype at the output's scale.
double golden_tolerance(const GoldenEntry &golden, attngate_dtype dtype);

/// The verdict of one output against its golden; shape is [B, Sq, Hq, Dv].
CheckResult golden_check(std::span<const float> got, std::span<const double> want, const GoldenEntry &golden,
                         attngate_dtype dtype);

/// "[b, s, h, d]" of a flat index.
std::string index_coords(int64_t index, std::span<const int64_t> shape);

}  // namespace attngate
