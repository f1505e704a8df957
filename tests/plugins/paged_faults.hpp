// The wrong paged kernels (paged_faults.cpp), joined to the faulty-kernel plugin's table.
#pragma once

#include <span>

#include "attngate/kernel_abi.h"

/// Paged kernels with one defect each: a read one slot past kv_len, the page table followed
/// one page off, the table ignored, GQA heads mapped modulo Hkv.
std::span<const attngate_kernel> paged_fault_kernels();
