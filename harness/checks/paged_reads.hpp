// What a golden failure on a paged case says about where the kernel read: every slot no query
// may read is NaN, and the backend's trace (UnreadableReads) tells which kind of slot each
// NaN output came from, so the report can name the defect, not just the NaN.
#pragma once

#include <string>

#include "plan/suite.hpp"
#include "results/observation.hpp"
#include "results/results.hpp"

namespace attngate {

/// "sequence 1, query 0, head 3, element 5" of an output element of a paged case.
std::string paged_coords(const CaseSpec &c, int64_t index);

/// Adds to a failing golden verdict what the trace found: "read past kv_len" and "read a page
/// outside its table", each with its count and first output. No trace: nothing to add.
void attribute_unreadable(CheckResult &golden, const CaseSpec &c, const UnreadableReads &u);

}  // namespace attngate
