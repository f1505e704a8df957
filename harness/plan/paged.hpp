// Paged cases in the plan: the suite's "paged" object read and validated, which pool page
// holds each sequence's pages (drawn from the counter RNG), and the pools themselves with
// NaN in every slot no query may read.
#pragma once

#include <cstdint>
#include <vector>

#include "io/json_io.hpp"
#include "plan/inputs.hpp"
#include "plan/suite.hpp"

namespace attngate {

/// Reads a paged case's shape from its "paged" object into c (batch, seq_q, seq_k and
/// c.paged); batch, seq_q and seq_k given beside it are bad input naming their path.
void read_paged_shape(ObjectReader &r, CaseSpec &c);

/// The dense fields a paged case cannot have (segments, bias): bad input naming their path.
void reject_dense_fields(ObjectReader &r);

/// Top-left alignment and a NaN index outside its sequence in a paged case: bad input
/// naming the JSON path. Called once the case is read.
void check_paged_case(ObjectReader &r, const CaseSpec &c);

/// Which pool page holds each sequence's pages.
struct PageLayout {
    std::vector<int32_t> table;   ///< [batch, pages_per_seq]; padding entries point at unused pages
    std::vector<int32_t> unused;  ///< pool pages no sequence holds, ascending
};

/// "contiguous": sequence after sequence from page 0. "scattered": a seeded permutation of
/// the pool, repaired so that no two consecutive pages of a sequence are neighbours in the
/// pool wherever its size allows; the same seed gives the same layout everywhere.
PageLayout make_page_layout(const PagedSpec &p, uint64_t seed);

/// Fills in's paged tensors for case c: queries, pools (NaN in every unreadable slot, the
/// suite's NaN in a readable one), page table and lengths. `seed` is the case's seed.
void generate_paged_inputs(const CaseSpec &c, uint64_t seed, CaseInputs &in);

/// The pool elements of one kind of unreadable slot, as element offsets into the K pool
/// (first) and the V pool (second); ascending.
std::pair<std::vector<int64_t>, std::vector<int64_t>> unreadable_elements(const CaseSpec &c, const CaseInputs &in,
                                                                            Unreadable kind);

/// A paged case's lengths and pool as one JSON object: the protocol's "paged" object
/// (docs/protocol.md) and the "paged" entry of a result's params (docs/results-schema.md).
json::object paged_params(const PagedSpec &p);

/// case.json's "paged" object: the layout, the lengths and what the NaN slots mean.
json::object paged_description(const CaseSpec &c, const CaseInputs &in);

}  // namespace attngate
