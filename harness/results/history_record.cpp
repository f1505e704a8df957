// History records: from results, to and from compact JSON.
#include "results/history_record.hpp"

#include <cmath>

#include "results/fingerprint.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

/// 5 significant digits: enough for a 0.1% trend, and short.
json::value compact(double x) {
    if (!std::isfinite(x)) return nullptr;
    return std::stod(fmt::format("{:.5g}", x));
}

/// A measured figure; a null one (NaN) is not kept.
template <class T>
std::optional<double> figure(const std::optional<T> &x) {
    if (!x || !std::isfinite(static_cast<double>(*x))) return std::nullopt;
    return static_cast<double>(*x);
}

const char *verdict_letter(Verdict v) { return v == Verdict::Pass ? "p" : v == Verdict::Fail ? "f" : "s"; }

/// Whether the window rule judged the row's first timing beyond its window: a regression (a
/// second timing was taken, whether it reproduced or not), an improvement or a stale baseline.
bool outside_its_window(const PerfMetrics &p) {
    using enum PerfCheckStatus;
    if (p.mode != PerfMode::Window || !p.status) return false;
    return *p.status == Regression || *p.status == Improvement || *p.status == StaleBaseline || p.reproduction_status.has_value();
}

}  // namespace

std::optional<double> HistoryRow::figure(HistoryFigure f) const {
    switch (f) {
    case HistoryFigure::MedianS: return median_s;
    case HistoryFigure::MaxAbsError: return max_abs_error;
    case HistoryFigure::Nmse: return nmse;
    case HistoryFigure::PeakBytes: return peak_bytes;
    case HistoryFigure::LeakBytesPerCall: return leak_bytes_per_call;
    case HistoryFigure::UsdPerMtok: return usd_per_mtok;
    }
    return std::nullopt;
}

const std::vector<std::string> &history_metrics() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto &[f, name] : enum_names(HistoryFigure{})) v.emplace_back(name);
        return v;
    }();
    return names;
}

const HistoryRow *HistoryRecord::find(std::string_view case_id, std::string_view kernel) const {
    for (const auto &r : rows)
        if (r.case_id == case_id && r.kernel == kernel) return &r;
    return nullptr;
}

HistoryRecord history_record(const RunResults &results, std::string run_id) {
    HistoryRecord rec;
    rec.run_id = std::move(run_id);
    rec.at = results.started_at;
    rec.suite = results.suite;
    rec.machine_class = results.machine_class;
    rec.tool = results.tool_version;
    rec.fingerprint_id = results.fingerprint.empty() ? "" : fingerprint_id(results.fingerprint);
    rec.verdict = verdict_name(results.verdict());
    for (const auto &c : results.results) {
        HistoryRow row;
        row.case_id = c.case_id;
        row.kernel = c.kernel;
        for (const auto &k : c.checks) {
            row.verdicts[k.name()] = verdict_letter(k.verdict);
            if (const auto *g = k.get<GoldenMetrics>()) {
                row.max_abs_error = figure(g->max_abs_error);
                row.nmse = figure(g->nmse);
                row.tolerance = figure(g->tolerance);
            } else if (const auto *m = k.get<MemoryMetrics>()) {
                row.peak_bytes = figure(m->abi_peak_bytes);
                row.leak_bytes_per_call = figure(m->leak_bytes_per_call);
            } else if (const auto *p = k.get<PerfMetrics>(); p && p->samples_s && !p->samples_s->empty()) {
                row.median_s = median(*p->samples_s);
                row.fastest_s = fastest(*p->samples_s);
                if (p->calibration_s && !p->calibration_s->empty()) {
                    row.calibration_s = median(*p->calibration_s);
                    row.calibration_fastest_s = fastest(*p->calibration_s);
                    rec.calibration_workload = p->calibration_workload.value_or("");
                }
                if (p->threads) rec.timing_threads = p->threads;
                row.outside_window = outside_its_window(*p);
                const ConfidenceInterval ci = median_ci(*p->samples_s);
                if (std::isfinite(ci.low)) row.median_low_s = ci.low, row.median_high_s = ci.high;
            } else if (const auto *cost = k.get<CostMetrics>()) {
                row.usd_per_mtok = figure(cost->usd_per_million_tokens);
            }
        }
        rec.rows.push_back(std::move(row));
    }
    return rec;
}

std::string serialize_history_record(const HistoryRecord &r) {
    json::array rows;
    for (const auto &row : r.rows) {
        json::object o{{"c", row.case_id}, {"k", row.kernel}};
        if (row.median_s) {
            json::array t{compact(*row.median_s)};
            if (row.median_low_s && row.median_high_s) t.push_back(compact(*row.median_low_s)), t.push_back(compact(*row.median_high_s));
            o["t"] = std::move(t);
        }
        const std::pair<const char *, const std::optional<double> *> fields[] = {
            {"err", &row.max_abs_error}, {"nmse", &row.nmse}, {"tol", &row.tolerance},
            {"peak", &row.peak_bytes},   {"leak", &row.leak_bytes_per_call}, {"usd", &row.usd_per_mtok},
            {"cal", &row.calibration_s}, {"f", &row.fastest_s}, {"calf", &row.calibration_fastest_s}};
        for (const auto &[key, value] : fields)
            if (*value) o[key] = compact(**value);
        json::object v;
        for (const auto &[check, letter] : row.verdicts) v[check] = letter;
        o["v"] = std::move(v);
        if (row.window_start) o["b"] = 1;
        if (row.outside_window) o["x"] = 1;
        rows.push_back(std::move(o));
    }
    json::object doc{{"schema", kHistorySchemaVersion}, {"run", r.run_id},        {"at", r.at},
                     {"suite", r.suite},                {"machine", r.machine_class}, {"tool", r.tool},
                     {"fp", r.fingerprint_id},         {"verdict", r.verdict}};
    if (!r.calibration_workload.empty()) doc["cw"] = r.calibration_workload;
    if (r.timing_threads) doc["th"] = *r.timing_threads;
    doc["rows"] = std::move(rows);
    return json::serialize(doc);
}

Result<HistoryRecord> parse_history_record(std::string_view text, const std::string &where) {
    auto doc = parse_json(text, where);
    if (!doc) return std::unexpected(doc.error());
    HistoryRecord rec;
    ObjectReader r(*doc, where, "$");
    r.integer("schema", kHistorySchemaVersion, 1, kHistorySchemaVersion);
    rec.run_id = r.required_string("run");
    rec.at = r.required_string("at");
    rec.suite = r.required_string("suite");
    rec.machine_class = r.string("machine", "");
    rec.tool = r.string("tool", "");
    rec.fingerprint_id = r.string("fp", "");
    rec.verdict = r.string("verdict", "");
    rec.calibration_workload = r.string("cw", "");
    if (r.raw("th")) rec.timing_threads = r.integer("th", 0, 0, 1024);
    const json::value *rows = r.raw("rows");
    if (r.ok() && (!rows || !rows->is_array())) r.fail_at("rows", "expected an array");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < rows->get_array().size(); ++i) {
        const json::value &v = rows->get_array()[i];
        ObjectReader rr(v, where, fmt::format("$.rows[{}]", i));
        HistoryRow row;
        row.case_id = rr.required_string("c");
        row.kernel = rr.required_string("k");
        if (const auto *t = rr.raw("t"); t && t->is_array()) {
            const auto &a = t->get_array();
            const auto at = [&](size_t j) { return j < a.size() && a[j].is_number() ? std::optional(a[j].to_number<double>()) : std::nullopt; };
            row.median_s = at(0), row.median_low_s = at(1), row.median_high_s = at(2);
        }
        const auto num = [&](const char *key) {
            const auto *x = rr.raw(key);
            return x && x->is_number() ? std::optional(x->to_number<double>()) : std::nullopt;
        };
        row.max_abs_error = num("err"), row.nmse = num("nmse"), row.tolerance = num("tol");
        row.peak_bytes = num("peak"), row.leak_bytes_per_call = num("leak"), row.usd_per_mtok = num("usd");
        row.calibration_s = num("cal");
        row.fastest_s = num("f"), row.calibration_fastest_s = num("calf");
        row.window_start = rr.raw("b") != nullptr;
        row.outside_window = rr.raw("x") != nullptr;
        if (const auto *vv = rr.raw("v"); vv && vv->is_object())
            for (const auto &[check, letter] : vv->get_object())
                if (letter.is_string()) row.verdicts[std::string(check)] = std::string(letter.get_string());
        if (auto e = rr.finish()) return std::unexpected(*e);
        rec.rows.push_back(std::move(row));
    }
    return rec;
}

}  // namespace attngate
