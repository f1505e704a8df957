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
    /// "case / kernel" of A that B does not have: B ran fewer cases or kernels, or some did not load.
    std::vector<std::string> only_in_a;
    /// B's kernel sources that did not load: what they serve was not compared, so B fails.
    std::vector<std::string> did_not_load_b;
    bool b_complete = true;  ///< false: B's run did not finish (killed), so B fails

    bool regression() const;
};

/// B is "current", A the reference; B fails when a row regressed, one of its kernel sources
/// did not load, or its run did not finish. Files timed on different machine classes are an error
/// (their timings do not compare), and so is a case x kernel of another shape in each file
/// (the suite changed under the same case id: neither its timings nor its outputs compare).
Result<CompareReport> compare_results(const RunResults &a, const RunResults &b, const DecisionPolicy &policy);

/// The samples and machine class of one case x kernel's perf check (empty when absent).
std::vector<double> perf_samples(const CaseResult &r, std::string *machine_class = nullptr);

}  // namespace attngate
