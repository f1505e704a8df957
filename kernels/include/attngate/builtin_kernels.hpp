// C++ entry points of the built-in kernels beyond the ABI table, for the harness's oracle.
#pragma once

#include "attngate/kernel_abi.h"

namespace attngate::kernels {

/// Straightforward attention at the problem's own precision: scores and softmax in f32,
/// probabilities normalised and rounded to the operand dtype, then P·V with f32
/// accumulation (what a plain framework implementation does). Its error against the fp64
/// reference calibrates the golden tolerance. Returns 0 on success.
int straightforward_forward(const attngate_problem &p, char *err, size_t err_len);

/// The reference kernel with its float64 result kept in float64 (the golden oracle);
/// p.out is ignored. Returns 0 on success.
int reference_forward_f64(const attngate_problem &p, double *out, char *err, size_t err_len);

}  // namespace attngate::kernels
