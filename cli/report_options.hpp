// The report options of run, report, merge and ab: one flag per entry of the report-format
// table, the --history files, and the history/trend options; and the one flow that turns
// them into files after a run.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "console.hpp"
#include "report/report_files.hpp"
#include "report/summary.hpp"
#include "results/results.hpp"
#include "store/store.hpp"

namespace attngate::cli {

/// --append-history, --trends and --history-last.
struct TrendArgs {
    bool append = false;
    bool trends = false;
    size_t last = 60;
};

struct ReportArgs {
    ReportPaths formats;               ///< --html, --markdown, ... (report_formats())
    std::vector<std::string> history;  ///< --history: earlier results files or directories
    TrendArgs trends;
};

/// Adds one option per report format (--html, --markdown, --junit, --gbench).
void add_report_format_options(CLI::App *cmd, ReportPaths &paths);

/// Adds the report formats, --history and the trend options.
void add_report_options(CLI::App *cmd, ReportArgs &args);

/// The --history runs of `suite`, read before the run so that a bad file costs nothing; and a
/// report path that holds something other than a report, or `results` (the run's --out), refused
/// then (replaceable_reports).
Result<ReportContext> report_context(const ReportArgs &args, const std::string &suite, const std::string &results = {});

/// After a run: appends it to the store's history when asked (saying where), fills
/// ctx.trends from the store's history (--trends) or the --history files plus this run,
/// and writes each requested report.
Result<void> finish_reports(const RunResults &results, Store &store, const ReportArgs &args, ReportContext &ctx, const Console &console);

}  // namespace attngate::cli
