// The numerically faulty kernels (numeric_faults.cpp), joined to the faulty-kernel plugin's table.
#pragma once

#include <span>

#include "attngate/kernel_abi.h"

/// Kernels with one numerical defect each: bf16 accumulation, one wrong row, a shift of
/// every element, soft-cap and bias in the wrong order.
std::span<const attngate_kernel> numeric_fault_kernels();
