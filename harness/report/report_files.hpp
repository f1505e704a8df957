// The one place that writes report files: the table of report formats (flag, serializer),
// each requested one serialised and written atomically; and the history of earlier runs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/error.hpp"
#include "io/files.hpp"
#include "report/summary.hpp"
#include "results/results.hpp"

namespace attngate {

/// One report format: its name (the CLI flag is --<name>), what it is for, and the pure
/// serializer that turns results into the file's bytes (hyperfine's ExportManager).
struct ReportFormat {
    std::string_view name;
    std::string_view help;
    std::string (*serialize)(const RunResults &, const ReportContext &);
    /// How a path about to be replaced is known to hold an earlier report of this format.
    OutputMark mark;
};

/// Every report format, in the order they are written.
const std::vector<ReportFormat> &report_formats();

/// "--html, --markdown, --junit or --gbench": the formats' flags, for messages.
std::string report_flags_said();

/// Which reports to write: a path per format name; absent or empty: not this one.
struct ReportPaths {
    std::map<std::string, std::string, std::less<>> paths;
    bool any() const;
    /// The path asked for this format, or "" when none.
    std::string of(std::string_view format) const;
};

/// Checks, before a run, that each requested report may be written: its path holds nothing, an
/// empty file or an earlier report of that format (start and mark). Anything else (a source
/// file, the config, a directory, a link, a file it cannot read, the results' own path
/// `results`, another format's path) is a Usage error naming the flag and the path, so that a
/// mistyped path never replaces a file that is not a report.
Result<void> replaceable_reports(const ReportPaths &paths, const std::string &results = {});

/// Removes the earlier reports at the requested paths (replaceable_reports checked them), once
/// the results they were written from are replaced: an interrupted run leaves no report of
/// the run before it beside its partial results.
Result<void> remove_earlier_reports(const ReportPaths &paths);

/// Writes each requested report (temporary file + rename).
Result<void> write_reports(const RunResults &r, const ReportContext &ctx, const ReportPaths &paths);

/// Earlier results of the same suite from files or directories (every *.json in a
/// directory that is a results file), oldest first by started_at. A named file that is
/// not a valid results.json is an error; other suites' results are skipped.
Result<std::vector<RunResults>> load_history(const std::vector<std::string> &paths, const std::string &suite);

}  // namespace attngate
