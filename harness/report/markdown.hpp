// Markdown reporter: a summary sized for a pull-request comment and $GITHUB_STEP_SUMMARY.
#pragma once

#include <string>

#include "report/summary.hpp"
#include "results/results.hpp"

namespace attngate {

/// Hard cap on the summary's size; GitHub truncates step summaries and comments beyond ~64 KB.
inline constexpr size_t kMarkdownMaxBytes = 60 * 1024;

/// Verdict, counts per check, failures with their numbers (truncated with "and N more"
/// to stay under kMarkdownMaxBytes), workloads, the fingerprint diff, and the HTML link text.
std::string markdown_serialize(const RunResults &r, const ReportContext &ctx);

}  // namespace attngate
