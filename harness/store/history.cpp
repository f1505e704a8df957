// History records through the store.
#include "store/history.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "results/fingerprint.hpp"

namespace attngate {

namespace {

Result<std::string> runs_prefix(const std::string &suite, const std::string &machine_class) {
    auto k = make_key({"history", suite, key_component(machine_class.empty() ? "unknown" : machine_class)}, "history of suite " + suite);
    if (!k) return std::unexpected(k.error());
    return *k + "/";
}

}  // namespace

std::string new_run_id(const std::string &started_at) {
    std::string stamp;
    for (char c : started_at)
        if (std::isalnum(static_cast<unsigned char>(c))) stamp.push_back(c);
    // Strictly increasing within this process, even for two ids in one microsecond.
    static std::atomic<int64_t> last{0};
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    int64_t prev = last.load(), us = 0;
    do us = std::max(now, prev + 1);
    while (!last.compare_exchange_weak(prev, us));
    std::random_device rd;
    return fmt::format("{}-{:016d}-{:08x}", stamp.empty() ? "unknown" : stamp, us, rd());
}

namespace {

/// history/<suite>/appended/<sha256 of the results, their machine class aside>: marks a run
/// as appended once (--machine may fill in the class), holding where its record is.
Result<std::string> appended_mark(const RunResults &results) {
    json::value identity = to_json(results);
    identity.as_object().erase("machine_class");
    return make_key({"history", results.suite, "appended", sha256_hex(json::serialize(identity))}, "history of suite " + results.suite);
}

/// Where a run's record (prefix "history") or its whole results (prefix "results") go.
Result<std::string> run_key(const char *prefix, const RunResults &results, const HistoryRecord &rec) {
    const std::string month = rec.at.size() >= 7 ? rec.at.substr(0, 7) : "unknown";
    return make_key({prefix, results.suite, key_component(results.machine_class.empty() ? "unknown" : results.machine_class),
                     key_component(month), rec.run_id + ".json"},
                    fmt::format("{} of suite {}", prefix, results.suite));
}

/// The run's fingerprint, once per distinct one (content-addressed).
Result<void> put_fingerprint(Store &store, const RunResults &results, const HistoryRecord &rec) {
    if (rec.fingerprint_id.empty()) return {};
    auto fp_key = make_key({"history", results.suite, "fingerprints", rec.fingerprint_id + ".json"}, "history of suite " + results.suite);
    if (!fp_key) return std::unexpected(fp_key.error());
    // A Conflict means another run stored the same bytes' key first.
    if (auto w = store.put(*fp_key, pretty_json(results.fingerprint), Precondition::must_not_exist()); !w && w.error().kind != ErrorKind::Conflict)
        return std::unexpected(w.error());
    return {};
}

/// The record (after its fingerprint), then, when `mark` is given, the appended mark.
Result<std::string> put_record(Store &store, const RunResults &results, const HistoryRecord &rec, const std::string *mark) {
    if (auto f = put_fingerprint(store, results, rec); !f) return std::unexpected(f.error());
    auto key = run_key("history", results, rec);
    if (!key) return std::unexpected(key.error());
    if (auto w = store.put(*key, serialize_history_record(rec) + "\n", Precondition::must_not_exist()); !w) return std::unexpected(w.error());
    if (mark)
        if (auto w = store.put(*mark, store.where(*key), Precondition::must_not_exist()); !w) return std::unexpected(w.error());
    return *key;
}

}  // namespace

std::string not_a_data_point(const RunResults &results) {
    if (!results.complete) return "$.complete is false: the run did not finish, so it is no data point of a trend (nothing appended)";
    if (results.results.empty()) return "nothing ran (its kernel sources did not load), so it is no data point of a trend (nothing appended)";
    return {};
}

Result<std::string> append_history(Store &store, const RunResults &results) {
    if (const std::string why = not_a_data_point(results); !why.empty()) return fail(ErrorKind::BadInput, "{}", why);
    auto mark = appended_mark(results);
    if (!mark) return std::unexpected(mark.error());
    auto before = store.get(*mark);
    if (!before) return std::unexpected(before.error());
    if (*before)
        return fail(ErrorKind::BadInput, "these results are in the history already, as {}: a run is one data point", (*before)->bytes);
    const HistoryRecord rec = history_record(results, new_run_id(results.started_at));
    // The whole results first, under the same run id: a record in the history can always be
    // opened in full, and trends never read these.
    auto full = run_key("results", results, rec);
    if (!full) return std::unexpected(full.error());
    if (auto w = store.put(*full, pretty_json(to_json(results)), Precondition::must_not_exist()); !w) return std::unexpected(w.error());
    return put_record(store, results, rec, &*mark);
}

Result<std::string> append_perf_window(Store &store, const RunResults &results, const std::set<std::string> &accepted) {
    auto mark = appended_mark(results);
    if (!mark) return std::unexpected(mark.error());
    auto before = store.get(*mark);
    if (!before) return std::unexpected(before.error());
    // The rows whose time moved to a new level: their windows start again at this run.
    std::set<std::string> moved;
    for (const auto &r : results.results)
        for (const auto &k : r.checks)
            if (const auto *p = k.get<PerfMetrics>(); p && p->status && (*p->status == PerfCheckStatus::Regression ||
                                                                        *p->status == PerfCheckStatus::Improvement ||
                                                                        *p->status == PerfCheckStatus::StaleBaseline))
                moved.insert(r.case_id + "/" + r.kernel);
    HistoryRecord rec = history_record(results, new_run_id(results.started_at));
    std::erase_if(rec.rows, [&](HistoryRow &row) {
        const std::string label = row.case_id + "/" + row.kernel;
        if (!row.median_s || !accepted.contains(label)) return true;
        row.window_start = moved.contains(label);
        row.outside_window = false;  // accepted: the row's window starts again here
        // A window's record holds the perf figures alone.
        const std::string perf_letter = row.verdicts.contains("perf") ? row.verdicts.at("perf") : "";
        row.max_abs_error = row.nmse = row.tolerance = row.peak_bytes = row.leak_bytes_per_call = row.usd_per_mtok = std::nullopt;
        row.verdicts.clear();
        if (!perf_letter.empty()) row.verdicts["perf"] = perf_letter;
        // Appended before: that record holds the row's value; only a new level is recorded again.
        return *before && !row.window_start;
    });
    if (rec.rows.empty()) return std::string{};
    return put_record(store, results, rec, *before ? nullptr : &*mark);
}

Result<History> load_history(Store &store, const std::string &suite, const std::string &machine_class, size_t last) {
    auto prefix = runs_prefix(suite, machine_class);
    if (!prefix) return std::unexpected(prefix.error());
    auto keys = store.list(*prefix);
    if (!keys) return std::unexpected(keys.error());
    std::vector<std::string> runs;
    for (const auto &k : *keys)
        if (k.ends_with(".json")) runs.push_back(k);
    // Keys sort by month, then by run id, which starts with the time.
    std::sort(runs.begin(), runs.end(), [](const std::string &a, const std::string &b) {
        return a.substr(a.rfind('/') + 1) < b.substr(b.rfind('/') + 1);
    });
    if (last > 0 && runs.size() > last) runs.erase(runs.begin(), runs.end() - static_cast<std::ptrdiff_t>(last));
    History h;
    for (const auto &k : runs) {
        auto obj = store.get(k);
        if (!obj) return std::unexpected(obj.error());
        if (!*obj) continue;
        auto rec = parse_history_record((*obj)->bytes, store.where(k));
        if (!rec) return std::unexpected(rec.error());
        if (!rec->fingerprint_id.empty() && !h.fingerprints.contains(rec->fingerprint_id)) {
            auto fp_key = make_key({"history", suite, "fingerprints", rec->fingerprint_id + ".json"}, "history of suite " + suite);
            if (!fp_key) return std::unexpected(fp_key.error());
            auto fp = store.get(*fp_key);
            if (!fp) return std::unexpected(fp.error());
            if (*fp)
                if (auto parsed = parse_fingerprint((*fp)->bytes, store.where(*fp_key)); parsed) h.fingerprints[rec->fingerprint_id] = *parsed;
        }
        h.records.push_back(std::move(*rec));
    }
    return h;
}

}  // namespace attngate
