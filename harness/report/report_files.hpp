// The one place that writes report files: serialises results with each requested
// reporter and writes them atomically; and loads the history of earlier runs for trends.
#pragma once

#include <string>
#include <vector>

#include "io/error.hpp"
#include "report/summary.hpp"
#include "results/results.hpp"

namespace attngate {

/// Which reports to write; an empty path means "not this one".
struct ReportPaths {
    std::string html, markdown, junit, gbench;
    bool any() const { return !html.empty() || !markdown.empty() || !junit.empty() || !gbench.empty(); }
};

/// Writes each requested report (temporary file + rename).
Result<void> write_reports(const RunResults &r, const ReportContext &ctx, const ReportPaths &paths);

/// Earlier results of the same suite from files or directories (every *.json in a
/// directory that is a results file), oldest first by started_at. A named file that is
/// not a valid results.json is an error; other suites' results are skipped.
Result<std::vector<RunResults>> load_history(const std::vector<std::string> &paths, const std::string &suite);

}  // namespace attngate
