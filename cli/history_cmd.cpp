// `attngate history`: a metric's series over the store's history with its change points,
// or runs appended to it.
#include <algorithm>

#include <fmt/format.h>

#include "backend/in_process_backend.hpp"
#include "command.hpp"
#include "common.hpp"
#include "io/json_io.hpp"
#include "results/trends.hpp"
#include "store/baseline_update.hpp"
#include "store/history.hpp"

namespace attngate::cli {

namespace {

struct HistoryArgs {
    std::string suite, machine, machine_class, case_id, kernel, metric = "median_s";
    std::vector<std::string> append;
    size_t last = 60;
    bool json = false, fail_on_drift = false;
    StoreArgs store;
};

bool selected(const HistoryArgs &a, HistoryFigure figure, const SeriesTrend &s) {
    return s.metric == figure && (a.case_id.empty() || s.case_id == a.case_id) && (a.kernel.empty() || s.kernel == a.kernel);
}

json::object series_json(const TrendReport &t, const SeriesTrend &s) {
    json::array changes;
    for (const auto &c : s.changes)
        changes.push_back(json::object{{"run", c.run + 1}, {"run_id", t.run_ids[c.run]}, {"relative_change", c.point.relative_change()},
                                       {"p_value", c.point.p_value}, {"description", describe_change(t, s, c)},
                                       {"fingerprint_change_run", c.shift ? json::value(t.shifts[*c.shift].run + 1) : json::value(nullptr)}});
    return {{"case", s.case_id}, {"kernel", s.kernel}, {"metric", enum_name(s.metric)}, {"values", json::array(s.values.begin(), s.values.end())},
            {"change_points", std::move(changes)}};
}

void print_series(const TrendReport &t, const SeriesTrend &s, const std::vector<HistoryRecord> &records, const Console &console) {
    console.say("{} / {} — {} over {} run(s)\n", s.case_id, s.kernel, enum_name(s.metric), s.values.size());
    for (size_t i = 0; i < s.values.size(); ++i) {
        const size_t run = s.runs[i];
        std::string mark;
        for (const auto &c : s.changes)
            if (c.point.index == i) mark += fmt::format("  <- change {:+.1f}%", 100.0 * c.point.relative_change());
        for (const auto &f : t.shifts)
            if (f.run == run) mark += "  <- fingerprint changed";
        console.say("  {:>4}  {:<22} {:<16} {:>12.6g}{}\n", run + 1, t.run_times[run], records[run].fingerprint_id, s.values[i], mark);
    }
    for (const auto &c : s.changes) console.say("  change point: {}\n", describe_change(t, s, c));
}

/// --append: each results file into the store's history.
int append(const HistoryArgs &a, Store &store, const Console &console) {
    for (const auto &f : a.append) {
        auto r = load_results(f);
        if (!r) return report_error(r.error());
        if (r->machine_class.empty()) r->machine_class = machine_class(a.machine, builtin_numerics_path());
        auto key = append_history(store, *r);
        if (!key) return report_error({key.error().kind, fmt::format("{}: {}", f, key.error().message)});
        console.say("recorded {} as {}\n", f, store.where(*key));
    }
    return kExitPass;
}

int history(const HistoryArgs &a, const Console &console) {
    auto store = open_store(a.store, a.append.empty() ? StoreUse::Read : StoreUse::Create);  // --append may start one
    if (!store) return report_error(store.error());
    if (const int rc = append(a, **store, console); rc != kExitPass) return rc;
    if (a.suite.empty()) {
        if (a.append.empty()) return report_error(Error{ErrorKind::Usage, "history: give --suite to print a series, or --append RESULTS"});
        return kExitPass;
    }
    std::string suite = a.suite;  // a name, or a suite file (attngate.toml's `suite` is one): its name
    if (suite.find('/') != std::string::npos || suite.ends_with(".json")) {
        auto s = resolve_suite(suite);
        if (!s) return report_error(s.error());
        suite = s->name;
    }
    const std::string cls = a.machine_class.empty() ? machine_class(a.machine, builtin_numerics_path()) : a.machine_class;
    auto h = load_history(**store, suite, cls, a.last);
    if (!h) return report_error(h.error());
    if (h->records.empty()) {
        console.say("no history for suite {} on machine class \"{}\" in {}\n", suite, cls, (*store)->describe());
        return kExitPass;
    }
    TrendOptions opt;
    const HistoryFigure figure = *parse_enum<HistoryFigure>(a.metric);  // --metric checks the name
    if (std::find(opt.metrics.begin(), opt.metrics.end(), figure) == opt.metrics.end()) opt.metrics.push_back(figure);
    const TrendReport t = analyze_trends(h->records, h->fingerprints, opt);
    bool drift = false;
    json::array out;
    for (const auto &s : t.series) {
        if (!selected(a, figure, s)) continue;
        for (const auto &c : s.changes) drift = drift || c.point.relative_change() > 0;
        if (a.json) out.push_back(series_json(t, s));
        else print_series(t, s, h->records, console);
    }
    if (a.json) console.data(pretty_json(out));
    else
        for (const auto &f : t.shifts) {
            std::string what;
            for (const auto &c : f.changes) what += (what.empty() ? "" : "; ") + c;
            console.say("fingerprint changed at run {} ({}): {}\n", f.run + 1, t.run_times[f.run], what.empty() ? "fingerprint not stored" : what);
        }
    return a.fail_on_drift && drift ? kExitDrift : kExitPass;
}

}  // namespace

Command add_history_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<HistoryArgs>();
    auto *cmd = app.add_subcommand("history", "print a metric's series over the store's history with change points, or append runs to it");
    cmd->add_option("--suite", a->suite, "suite name");
    cmd->add_option("--machine", a->machine, "the machine class name given to run --machine")->check(non_empty_name());
    cmd->add_option("--machine-class", a->machine_class, "the exact machine class (as results.json records it)");
    cmd->add_option("--case", a->case_id, "only this case");
    cmd->add_option("--kernel", a->kernel, "only this kernel label");
    cmd->add_option("--metric", a->metric, "median_s, max_abs_error, nmse, peak_bytes, leak_bytes_per_call or usd_per_mtok")
        ->check(CLI::IsMember(history_metrics()))
        ->capture_default_str();
    cmd->add_option("--last", a->last, "only the latest N runs (0: all)")->check(CLI::Range(0, 1000000))->capture_default_str();
    cmd->add_flag("--json", a->json, "print the series and change points as JSON");
    cmd->add_flag("--fail-on-drift", a->fail_on_drift, "exit 1 when a change point moves the metric up (slower, bigger)");
    cmd->add_option("--append", a->append, "append these results.json files to the history (repeatable)");
    add_store_options(cmd, a->store);
    return {cmd, [a, &console] { return history(*a, console); }};
}

}  // namespace attngate::cli
