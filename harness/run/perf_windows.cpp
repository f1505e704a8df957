// Perf windows from the store's history.
#include "run/perf_windows.hpp"

#include <cmath>

#include "stats/perf_window.hpp"
#include "stats/stats.hpp"
#include "store/history.hpp"

namespace attngate {

namespace {

double log_ratio(std::optional<double> t, std::optional<double> cal) {
    if (!t || !cal || !(*t > 0.0) || !(*cal > 0.0)) return kNaN;
    return std::log(*t / *cal);
}

}  // namespace

double calibrated_log_time(const std::vector<double> &samples_s, const std::vector<double> &calibration_s) {
    if (samples_s.empty() || calibration_s.empty()) return kNaN;
    return log_ratio(median(samples_s), median(calibration_s));
}

Result<PerfWindows> PerfWindows::load(Store &store, const std::string &suite, const std::string &machine_class,
                                      const std::string &workload) {
    auto history = load_history(store, suite, machine_class, kWindowRuns);
    if (!history) return std::unexpected(history.error());
    std::vector<const HistoryRecord *> runs;
    for (const auto &rec : history->records)
        if (rec.calibration_workload == workload) runs.push_back(&rec);
    PerfWindows w;
    w.runs_ = runs.size();
    // Every row's values over the runs (NaN where it was not timed, or before its window starts).
    std::map<std::pair<std::string, std::string>, std::vector<double>> by_key;
    std::vector<double> calibrations;
    for (size_t j = 0; j < runs.size(); ++j) {
        std::vector<double> run_cal;
        for (const auto &row : runs[j]->rows) {
            const double v = log_ratio(row.median_s, row.calibration_s);
            if (!std::isfinite(v)) continue;
            auto &series = by_key[{row.case_id, row.kernel}];
            series.resize(runs.size(), kNaN);
            if (row.window_start) std::fill(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(j), kNaN);
            series[j] = v;
            run_cal.push_back(*row.calibration_s);
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
