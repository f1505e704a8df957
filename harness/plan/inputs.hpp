// Deterministic inputs of a case: Q, K, V, bias and segment ids drawn from the
// counter-based generator, and the attngate_problem that points at them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"
#include "plan/suite.hpp"

namespace attngate {

struct CaseInputs {
    attngate_dtype dtype = ATTNGATE_DTYPE_F32;
    std::vector<float> q, k, v;  ///< values; exactly representable in bf16 when dtype is bf16
    std::vector<std::uint16_t> q_bf16, k_bf16, v_bf16;  ///< operand bits when dtype is bf16
    std::vector<float> bias;                            ///< empty: no bias
    std::vector<int32_t> segment_ids_q, segment_ids_kv; ///< empty: no segments

    /// SHA-256 over every input tensor's bytes, recorded with the golden.
    std::string sha256() const;
};

/// Draws a case's inputs; the same (suite seed, case) gives the same bits everywhere.
CaseInputs generate_inputs(const Suite &suite, const CaseSpec &c);

/// The problem for a kernel call; out must hold B*Sq*Hq*Dv floats.
attngate_problem make_problem(const CaseSpec &c, const CaseInputs &in, float *out,
                              const attngate_allocator *allocator, int64_t block_q = 0,
                              int64_t block_k = 0);

int64_t output_elements(const CaseSpec &c);
std::vector<int64_t> output_shape(const CaseSpec &c);

/// Writes q.npy, k.npy, v.npy (float32 values), bias.npy and segment_ids_{q,kv}.npy
/// when present, and case.json describing the semantics, into dir.
Result<void> write_case_inputs(const Suite &suite, const CaseSpec &c, const std::filesystem::path &dir);

}  // namespace attngate
