// Inline SVG charts for the HTML report: no network, no script needed to draw them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "results/check_metrics.hpp"

namespace attngate {

/// The golden check's error_map as a heatmap: rows = sequence position, columns = value
/// head dim, colour = error relative to the tolerance (red at or above it, black for
/// NaN/inf). Returns "" when the map is malformed.
std::string svg_heatmap(const ErrorMap &error_map, double tolerance);

/// A small line chart of ys over x = 0..n-1, with an optional horizontal reference line.
std::string svg_line_chart(const std::vector<double> &ys, const std::string &y_label, const double *reference = nullptr);

/// A trend over runs: the values as a line, a red dashed vertical line and its label
/// ("+3.0%") before each change point's first value, and a grey dotted line with a
/// diamond where the fingerprint changed (value positions).
std::string svg_trend_chart(const std::vector<double> &ys, const std::string &y_label,
                            const std::vector<std::pair<size_t, std::string>> &change_points,
                            const std::vector<size_t> &fingerprint_changes, const double *reference = nullptr);

/// Two rows of dots on a shared axis (e.g. this run's timing samples and the baseline's),
/// each with its median marked.
std::string svg_distribution(const std::vector<double> &current, const std::vector<double> &baseline, const std::string &x_label);

/// The perf decision on one axis of time ratio (this run / baseline): the baseline at 1,
/// the regression threshold (dashed red), the confidence interval as a bar and the ratio as
/// a dot. "" when a number is not finite.
std::string svg_ratio_interval(double ratio, double ci_low, double ci_high, double threshold);

/// Horizontal bars with labels, e.g. peak bytes against the baseline's.
std::string svg_bars(const std::vector<std::pair<std::string, double>> &bars, const std::string &unit);

}  // namespace attngate
