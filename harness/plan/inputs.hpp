// Deterministic inputs of a case: Q, K, V, bias and segment ids (or, for a paged case, the
// K and V page pools and the page tables) drawn from the counter-based generator, and the
// attngate_problem that points at them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"
#include "io/files.hpp"
#include "io/npy.hpp"
#include "plan/suite.hpp"

namespace attngate {

struct CaseInputs {
    attngate_dtype dtype = ATTNGATE_DTYPE_F32;
    /// Values; exactly representable in bf16 when dtype is bf16. A paged case holds its
    /// pools in k and v ([pages, page_size, Hkv, D]) and its queries in q ([seq_q, Hq, D]).
    std::vector<float> q, k, v;
    std::vector<std::uint16_t> q_bf16, k_bf16, v_bf16;  ///< operand bits when dtype is bf16
    std::vector<float> bias;                            ///< empty: no bias
    std::vector<int32_t> segment_ids_q, segment_ids_kv; ///< empty: no segments
    /// Paged cases only (else empty): the page table [batch, pages_per_seq], kv_lens [batch]
    /// and cu_q_lens [batch + 1].
    std::vector<int32_t> page_table, kv_lens, cu_q_lens;
    int64_t num_pages = 0, page_size = 0, pages_per_seq = 0;

    bool paged() const { return !kv_lens.empty(); }
    /// SHA-256 over every input tensor's bytes, recorded with the golden.
    std::string sha256() const;
    /// The paged description of this object's own tensors (make_problem points at it), or
    /// null for a dense case. Refreshed on every call, so a copy describes its own tensors.
    const attngate_paged_kv *paged_view() const;

private:
    mutable attngate_paged_kv view_{};
};

/// Which unreadable slots of a paged case's pools are NaN: the two kinds the report tells
/// apart when a kernel reads one (plan/paged.hpp fills them).
enum class Unreadable {
    PastKvLen,     ///< slots past kv_len in a sequence's last page ("read past kv_len")
    OutsideTable,  ///< pages no sequence's table holds ("read a page outside its table")
};

/// Draws a case's inputs; the same (suite seed, case) gives the same bits everywhere.
CaseInputs generate_inputs(const Suite &suite, const CaseSpec &c);

/// The case's inputs with the given kinds of unreadable slot holding finite values (zeros)
/// instead of NaN: the backend's trace of which kind a kernel's NaN outputs come from.
CaseInputs with_finite(const CaseInputs &in, const CaseSpec &c, std::initializer_list<Unreadable> kinds);

/// The problem for a kernel call; out must hold B*Sq*Hq*Dv floats.
attngate_problem make_problem(const CaseSpec &c, const CaseInputs &in, float *out,
                              const attngate_allocator *allocator, int64_t block_q = 0,
                              int64_t block_k = 0);

int64_t output_elements(const CaseSpec &c);
std::vector<int64_t> output_shape(const CaseSpec &c);

/// A case's input tensors by name, as `attngate inputs` writes them and the remote protocol
/// uploads them (dense: q, k, v, bias, segment_ids_q/kv; paged: q, k_pages, v_pages,
/// page_table, kv_lens, cu_q_lens).
std::vector<std::pair<std::string, NpyArray>> input_tensors(const CaseSpec &c, const CaseInputs &in);

/// Writes q.npy, k.npy, v.npy (float32 values), bias.npy and segment_ids_{q,kv}.npy
/// when present (a paged case: q.npy, k_pages.npy, v_pages.npy, page_table.npy,
/// kv_lens.npy, cu_q_lens.npy), and case.json describing the semantics, into dir.
Result<void> write_case_inputs(const Suite &suite, const CaseSpec &c, const std::filesystem::path &dir);

/// What write_case_inputs leaves: how a directory of earlier inputs is known (its case.json).
inline constexpr OutputDir kCaseInputsDir{"`attngate inputs`", "case.json", {"{\n  \"suite\": ", "\"inputs_sha256\": "}, ".npy"};

}  // namespace attngate
