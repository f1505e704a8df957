// Trends over the history: per case x kernel and metric the series of per-run values, its
// change points (E-divisive with a permutation test) that move the value by at least a
// practical amount, the runs where the fingerprint changed (dependency bumps) with what
// changed, and each change point attributed to the nearest such run. Reporters draw this;
// `attngate history` prints it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/history_record.hpp"
#include "stats/changepoint.hpp"

namespace attngate {

struct TrendOptions {
    ChangePointOptions change_points;
    /// A change point moving the mean by less than this fraction is not reported (timing
    /// noise that is real but not worth a person's time).
    double min_relative_change = 0.01;
    /// A fingerprint change at most this many runs before or after a change point explains it.
    size_t attribution_window = 3;
    std::vector<HistoryFigure> metrics = {HistoryFigure::MedianS, HistoryFigure::MaxAbsError, HistoryFigure::PeakBytes,
                                          HistoryFigure::LeakBytesPerCall};
};

/// A run whose fingerprint differs from the run before it.
struct FingerprintShift {
    size_t run = 0;                    ///< index into the records
    std::vector<std::string> changes;  ///< "key: old → new"; empty when a fingerprint was not stored
};

struct TrendChange {
    ChangePoint point;        ///< point.index indexes the series' values
    size_t run = 0;           ///< index into the records of its first run
    std::optional<size_t> shift;  ///< index into TrendReport::shifts of the attributed fingerprint change
};

struct SeriesTrend {
    std::string case_id, kernel;
    HistoryFigure metric = HistoryFigure::MedianS;
    std::vector<size_t> runs;     ///< index into the records, per value
    std::vector<double> values;
    std::vector<TrendChange> changes;
};

struct TrendReport {
    std::vector<std::string> run_ids, run_times;  ///< per record
    std::vector<FingerprintShift> shifts;
    std::vector<SeriesTrend> series;              ///< every case x kernel x metric with values

    const SeriesTrend *find(std::string_view case_id, std::string_view kernel, HistoryFigure metric) const;
    /// Every change point, across series, in run order.
    size_t change_count() const;
};

/// Analyses the records (oldest first); fingerprints by id, as load_history returns them.
TrendReport analyze_trends(const std::vector<HistoryRecord> &records, const std::map<std::string, json::object> &fingerprints,
                           const TrendOptions &options = {});

/// "+3.1% at run 2026-03-02T01:00:00Z (p = 0.005), attributed to the fingerprint change
/// there: blas: 0.3.21 → 0.3.26"
std::string describe_change(const TrendReport &report, const SeriesTrend &series, const TrendChange &change);

}  // namespace attngate
