// Comparing two results files' timings with the perf gate's rule (independent samples,
// Benjamini-Hochberg across the comparisons): the `compare` subcommand.
#pragma once

#include <string>
#include <vector>

#include "stats/perf_decision.hpp"
#include "results/results.hpp"

namespace attngate {

struct Comparison {
    std::string case_id, kernel;
    PerfDecision decision;
};

struct CompareReport {
    std::vector<Comparison> rows;  ///< case x kernels timed in both files
    std::string machine_a, machine_b;
    bool regression() const;
};

/// B is "current", A the reference. Files timed on different machine classes are an error
/// (their timings do not compare), and so is a case x kernel of another shape in each file
/// (the suite changed under the same case id: neither its timings nor its outputs compare).
Result<CompareReport> compare_results(const RunResults &a, const RunResults &b, const DecisionPolicy &policy);

/// The samples and machine class of one case x kernel's perf check (empty when absent).
std::vector<double> perf_samples(const CaseResult &r, std::string *machine_class = nullptr);

}  // namespace attngate
