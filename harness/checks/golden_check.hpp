// The golden check: a kernel's output against the fp64 golden, with tolerances calibrated
// by the straightforward implementation's error (docs/golden-and-numerics.md).
#pragma once

#include <span>
#include <vector>

#include "attngate/kernel_abi.h"
#include "plan/kernel_info.hpp"
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
ErrorMap error_map(std::span<const float> got, std::span<const double> want, std::span<const int64_t> shape,
                       int64_t max_rows = 32, int64_t max_cols = 16);

/// The floor of both tolerances: 2 ulp of the output's dtype (f32, whatever the operands)
/// at the output's scale, so that an exactly computable case does not demand zero error.
double golden_floor(const GoldenEntry &golden);

/// Tolerance on the max abs error: 2 x the straightforward implementation's max abs error
/// + the floor (FlashAttention's rule, with its floor at the output's precision).
double golden_tolerance(const GoldenEntry &golden);

/// Tolerance on the RMS error: 2 x the straightforward implementation's RMS error + the
/// floor, so that a shift spread over many elements, each within the max-abs tolerance,
/// still fails. Negative when the manifest predates the straightforward RMS error.
double golden_rms_tolerance(const GoldenEntry &golden);

/// The verdict of one output against its golden; shape is [B, Sq, Hq, Dv]. Fails on a
/// NaN/inf where the golden is finite, a number where it is NaN, a max abs error over its
/// tolerance, or an RMS error over its tolerance; the metrics carry both margins (error ÷
/// tolerance).
/// allowance (>= 0) widens both tolerances by what the kernel's declared rounding can cost.
CheckResult golden_check(std::span<const float> got, std::span<const double> want, const GoldenEntry &golden,
                         double allowance = 0.0);

/// What rounding to bf16 costs at most on a bf16 case (0 otherwise): the unit roundoff
/// u = 2^-8 times max |out| for a rounded output, plus u times max |V| for probabilities
/// rounded before P·V (each p moves by at most u·p, and the p sum to 1).
double rounding_allowance(const DeclaredRounding &r, attngate_dtype dtype, double max_abs_out, std::span<const float> v);

/// "[b, s, h, d]" of a flat index.
std::string index_coords(int64_t index, std::span<const int64_t> shape);

}  // namespace attngate
