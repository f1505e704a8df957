// One run in the history: a compact record per case x kernel (median time and its 95% CI,
// error metrics, peak memory, leak rate, cost per token, each check's verdict) plus the
// run's fingerprint id, small enough that years of nightly runs stay cheap to read.
// Serialised as one line of JSON with short keys (docs/fleet.md lists them).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/error.hpp"
#include "io/json_describe.hpp"
#include "io/json_io.hpp"
#include "results/results.hpp"

namespace attngate {

inline constexpr int kHistorySchemaVersion = 1;

/// The figures a history row keeps, under the names `attngate history --metric` takes.
enum class HistoryFigure { MedianS, MaxAbsError, Nmse, PeakBytes, LeakBytesPerCall, UsdPerMtok };
constexpr auto enum_names(HistoryFigure) {
    using enum HistoryFigure;
    return std::array{std::pair{MedianS, "median_s"},     std::pair{MaxAbsError, "max_abs_error"},
                      std::pair{Nmse, "nmse"},            std::pair{PeakBytes, "peak_bytes"},
                      std::pair{LeakBytesPerCall, "leak_bytes_per_call"}, std::pair{UsdPerMtok, "usd_per_mtok"}};
}

struct HistoryRow {
    std::string case_id, kernel;
    std::optional<double> median_s, median_low_s, median_high_s;  ///< "t": [median, low, high]
    std::optional<double> max_abs_error, nmse, tolerance;         ///< "err", "nmse", "tol"
    std::optional<double> peak_bytes, leak_bytes_per_call;        ///< "peak", "leak"
    std::optional<double> usd_per_mtok;                           ///< "usd": cost per million tokens
    /// "cal": the calibration workload's median time (one thread) timed with this row: what
    /// a perf window divides its median by (perf_windows.hpp).
    std::optional<double> calibration_s;
    /// "f": the row's fastest repetition, and "calf" the calibration workload's fastest
    /// timed with it: a perf window's reading is log(f / calf) (perf_windows.hpp).
    std::optional<double> fastest_s, calibration_fastest_s;
    /// "b": this run starts the row's perf window (its times were accepted as a new level by
    /// `baseline update --checks perf`); earlier runs are not in the window.
    bool window_start = false;
    /// "x": the window rule found this row's time beyond its window in this run (a
    /// regression, reproduced or not, an improvement or a stale baseline): the value stays
    /// out of the window, so one outlier does not widen it for the next 20 runs and a real
    /// regression stays red until `baseline update --checks perf` accepts it ("b").
    bool outside_window = false;
    std::map<std::string, std::string> verdicts;                  ///< "v": check -> "p"/"f"/"s"

    std::optional<double> figure(HistoryFigure f) const;
};

struct HistoryRecord {
    std::string run_id;          ///< unique per run, sorts by time
    std::string at;              ///< the run's start, UTC ISO 8601
    std::string suite, machine_class, tool;
    std::string fingerprint_id;  ///< fingerprint_id() of the run's fingerprint
    std::string verdict;         ///< the run's verdict
    std::string calibration_workload;  ///< "cw": the workload the rows' "cal" timed (calibration.hpp)
    std::optional<int64_t> timing_threads;  ///< "th": the kernel threads the rows were timed on (perf.threads)
    std::vector<HistoryRow> rows;

    const HistoryRow *find(std::string_view case_id, std::string_view kernel) const;
};

/// The names of the figures history keeps (HistoryFigure's), for the command line.
const std::vector<std::string> &history_metrics();

/// The record of a run (its rows in results order).
HistoryRecord history_record(const RunResults &results, std::string run_id);

/// One line of compact JSON (numbers to 5 significant digits), no trailing newline.
std::string serialize_history_record(const HistoryRecord &r);
Result<HistoryRecord> parse_history_record(std::string_view text, const std::string &where);

}  // namespace attngate
