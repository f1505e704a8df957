// Trend analysis over history records.
#include "results/trends.hpp"

#include <cmath>

#include "results/fingerprint.hpp"

namespace attngate {

const SeriesTrend *TrendReport::find(std::string_view case_id, std::string_view kernel, HistoryFigure metric) const {
    for (const auto &s : series)
        if (s.case_id == case_id && s.kernel == kernel && s.metric == metric) return &s;
    return nullptr;
}

size_t TrendReport::change_count() const {
    size_t n = 0;
    for (const auto &s : series) n += s.changes.size();
    return n;
}

TrendReport analyze_trends(const std::vector<HistoryRecord> &records, const std::map<std::string, json::object> &fingerprints,
                           const TrendOptions &o) {
    TrendReport t;
    for (size_t i = 0; i < records.size(); ++i) {
        t.run_ids.push_back(records[i].run_id);
        t.run_times.push_back(records[i].at);
        if (i == 0 || records[i].fingerprint_id == records[i - 1].fingerprint_id) continue;
        FingerprintShift shift{i, {}};
        const auto before = fingerprints.find(records[i - 1].fingerprint_id), after = fingerprints.find(records[i].fingerprint_id);
        if (before != fingerprints.end() && after != fingerprints.end())
            for (const auto &c : diff_fingerprints(before->second, after->second)) shift.changes.push_back(describe_change(c));
        t.shifts.push_back(std::move(shift));
    }
    // Series in the order their case x kernel first appears.
    std::vector<std::pair<std::string, std::string>> labels;
    for (const auto &r : records)
        for (const auto &row : r.rows)
            if (std::find(labels.begin(), labels.end(), std::pair(row.case_id, row.kernel)) == labels.end())
                labels.emplace_back(row.case_id, row.kernel);
    for (const auto &[case_id, kernel] : labels)
        for (const auto &metric : o.metrics) {
            SeriesTrend s{case_id, kernel, metric, {}, {}, {}};
            for (size_t i = 0; i < records.size(); ++i)
                if (const HistoryRow *row = records[i].find(case_id, kernel))
                    if (auto v = row->figure(metric); v && std::isfinite(*v)) s.runs.push_back(i), s.values.push_back(*v);
            if (s.values.empty()) continue;
            for (const ChangePoint &cp : e_divisive(s.values, o.change_points)) {
                if (std::fabs(cp.relative_change()) < o.min_relative_change) continue;
                TrendChange c{cp, s.runs[cp.index], std::nullopt};
                size_t best = o.attribution_window + 1;
                for (size_t k = 0; k < t.shifts.size(); ++k) {
                    const size_t d = t.shifts[k].run > c.run ? t.shifts[k].run - c.run : c.run - t.shifts[k].run;
                    if (d < best) best = d, c.shift = k;
                }
                s.changes.push_back(c);
            }
            t.series.push_back(std::move(s));
        }
    return t;
}

std::string describe_change(const TrendReport &t, const SeriesTrend &s, const TrendChange &c) {
    std::string text = fmt::format("{:+.1f}% from run {} ({}), p = {:.3g}", 100.0 * c.point.relative_change(), c.run + 1,
                                   c.run < t.run_times.size() ? t.run_times[c.run] : "?", c.point.p_value);
    if (!c.shift) return text + "; no fingerprint change nearby: the code or the machine";
    const FingerprintShift &f = t.shifts[*c.shift];
    std::string what;
    for (size_t i = 0; i < f.changes.size() && i < 4; ++i) what += (i ? "; " : "") + f.changes[i];
    if (f.changes.size() > 4) what += fmt::format("; and {} more", f.changes.size() - 4);
    (void)s;
    return text + fmt::format("; attributed to the fingerprint change at run {} ({}): {}", f.run + 1, t.run_times[f.run],
                              what.empty() ? "fingerprint not stored" : what);
}

}  // namespace attngate
