// Perf windows from the store's history.
#include "run/perf_windows.hpp"

#include <cmath>
#include <limits>

#include "stats/perf_window.hpp"
#include "stats/stats.hpp"
#include "store/history.hpp"

namespace attngate {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double log_ratio(std::optional<double> t, std::optional<double> cal) {
    if (!t || !cal || !(*t > 0.0) || !(*cal > 0.0)) return kNaN;
    return std::log(*t / *cal);
}

}  // namespace

FastestReading fastest_reading(const std::vector<double> &samples_s, const std::vector<double> &calibration_s) {
    if (samples_s.size() < 2 || calibration_s.empty()) return {kNaN, kNaN};
    double first = kInf, second = kInf;
    for (double x : samples_s) {
        if (x < first) second = first, first = x;
        else if (x < second) second = x;
    }
    const double cal = fastest(calibration_s);
    return {log_ratio(first, cal), log_ratio(second, cal)};
}

Result<PerfWindows> PerfWindows::load(Store &store, const std::string &suite, const std::string &machine_class,
                                      const std::string &workload, int threads) {
    auto history = load_history(store, suite, machine_class, kWindowRuns);
    if (!history) return std::unexpected(history.error());
    std::vector<const HistoryRecord *> runs;
    for (const auto &rec : history->records)
        if (rec.calibration_workload == workload && rec.timing_threads == threads) runs.push_back(&rec);
    PerfWindows w;
    w.runs_ = runs.size();
    // Every row's values over the runs (NaN where it was not timed, or before its window starts).
    std::map<std::pair<std::string, std::string>, std::vector<double>> by_key;
    std::vector<double> calibrations;
    for (size_t j = 0; j < runs.size(); ++j) {
        std::vector<double> run_cal;
        for (const auto &row : runs[j]->rows) {
            const double v = log_ratio(row.fastest_s, row.calibration_fastest_s);
            if (!std::isfinite(v) || row.outside_window) continue;
            auto &series = by_key[{row.case_id, row.kernel}];
            series.resize(runs.size(), kNaN);
            if (row.window_start) std::fill(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(j), kNaN);
            series[j] = v;
            run_cal.push_back(*row.calibration_fastest_s);
        }
        if (!run_cal.empty()) calibrations.push_back(median(run_cal));
    }
    w.calibration_s_ = calibrations.empty() ? kNaN : median(calibrations);
    std::vector<std::vector<double>> matrix;
    for (auto &[key, series] : by_key) matrix.push_back(std::move(series));
    for (double shift : remove_run_shifts(matrix))
        if (std::isfinite(shift)) w.run_shifts_.push_back(shift);
    size_t i = 0;
    for (const auto &[key, unused] : by_key) {
        std::vector<double> values;
        for (double x : matrix[i++])
            if (std::isfinite(x)) values.push_back(x);
        w.rows_[key] = std::move(values);
    }
    return w;
}

const std::vector<double> &PerfWindows::of(const std::string &case_id, const std::string &kernel) const {
    static const std::vector<double> none;
    const auto it = rows_.find({case_id, kernel});
    return it == rows_.end() ? none : it->second;
}

}  // namespace attngate
