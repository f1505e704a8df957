// The perf check: a case x kernel's timing samples against its baseline samples, judged
// by the perf decision rule (perf_decision.hpp), with throughput figures.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stats/perf_decision.hpp"
#include "results/results.hpp"
#include "checks/throughput.hpp"

namespace attngate {

/// Where the baseline samples came from, when there are none to compare.
enum class PerfBaselineState { Present, Missing, OtherMachine };

/// Throughput metrics of a sample set: samples, median, MAD, tokens/s, GFLOP/s.
json::object timing_metrics(const std::vector<double> &samples_s, const AttentionShape &shape, double flops);

/// The check from a decision (after the run-wide Benjamini-Hochberg pass).
/// baseline_note names the other machine class or says no baseline exists. A case the rule
/// cannot gate (too noisy, too few repetitions, no baseline) is a skip, or with `strict`
/// (dedicated runners: --strict, suite perf.require_verdict) a failure.
CheckResult perf_check(const std::vector<double> &samples_s, const std::vector<double> &baseline_s,
                       const PerfDecision *decision, PerfBaselineState state, const std::string &baseline_note,
                       const AttentionShape &shape, double flops, double threshold_pct, const std::string &machine_class,
                       bool strict = false);

/// Sets a decision's figures, status, reason and verdict on a perf check that compared
/// against a baseline: what perf_check does, and what `merge` redoes after the
/// Benjamini-Hochberg pass over every shard's comparisons.
void apply_perf_decision(CheckResult &check, const PerfDecision &decision);

}  // namespace attngate
