// The tables `compare` and `ab` print (and `compare --json` writes): one row per case x
// kernel's perf decision, and what moved in the numerics and golden checks.
#pragma once

#include <string>
#include <vector>

#include "io/json_io.hpp"
#include "results/results.hpp"

namespace attngate::cli {

/// One case x kernel's perf decision as printed.
struct PerfRow {
    std::string case_id, kernel, status, reason;
    double ratio, ci_low, ci_high, p_adjusted;
};

/// The rows under a header line.
std::string perf_table(const std::vector<PerfRow> &rows);

/// The rows as JSON objects (case, kernel, status, ratio, ci_low, ci_high, p_adjusted, reason).
json::array perf_json(const std::vector<PerfRow> &rows);

/// The numerics checks, and the golden checks that failed: what moved, per case x kernel
/// (empty when nothing did).
std::string numerics_table(const std::vector<CaseResult> &results);

/// The same rows as JSON objects (case, kernel, check, verdict, reason, notes).
json::array numerics_json(const std::vector<CaseResult> &results);

}  // namespace attngate::cli
