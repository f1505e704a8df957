// What a golden failure on a paged case says about where the kernel read: every slot no query
// may read is NaN, and the backend's trace (UnreadableReads) tells which kind of slot each
// NaN output came from, so the report can name the defect, not just the NaN.
#pragma once

#include <string>

#include "plan/suite.hpp"
#include "backend/observation.hpp"
#include "results/results.hpp"

namespace attngate {

/// "sequence 1, query 0, head 3, element 5" of an output element of a paged case.
std::string paged_coords(const CaseSpec &c, int64_t index);

/// Adds to a golden verdict of a paged case what the trace found: the counts in its metrics
/// and, when it failed, "read past kv_len" and "read a page outside its table" with each one's
/// first output in its reason; the worst element is named by sequence and query.
void attribute_unreadable(CheckResult &golden, const CaseSpec &c, const UnreadableReads &u);

/// The worst element of a paged case's golden verdict by sequence and query: worst_coords,
/// and the reason of a failure at it. Dense cases: nothing changes.
void name_paged_worst(CheckResult &golden, const CaseSpec &c);

}  // namespace attngate
