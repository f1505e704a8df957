// merge, history, and the trend options.
#include "fleet_cmds.hpp"

#include <memory>

#include <fmt/format.h>

#include "checks/cost.hpp"
#include "report/console.hpp"
#include "report/report_files.hpp"
#include "results/fingerprint.hpp"
#include "results/trends.hpp"
#include "run/merge.hpp"
#include "run/workloads.hpp"
#include "store/baseline_update.hpp"
#include "store/history.hpp"

namespace attngate::cli {

void add_trend_options(CLI::App *cmd, TrendArgs &args) {
    cmd->add_flag("--append-history", args.append, "append this run's compact record to the store's history");
    cmd->add_flag("--trends", args.trends, "draw trends and change points from the store's history for this suite and machine class");
    cmd->add_option("--history-last", args.last, "how many of the latest history runs trends read")->capture_default_str();
}

namespace {

/// The current run as a record, unless the history already ends with it.
void add_current(std::vector<HistoryRecord> &records, std::map<std::string, json::object> &fps, const RunResults &r) {
    HistoryRecord now = history_record(r, r.started_at);
    if (!records.empty() && records.back().at == now.at && records.back().fingerprint_id == now.fingerprint_id) return;
    if (!now.fingerprint_id.empty()) fps.emplace(now.fingerprint_id, r.fingerprint);
    records.push_back(std::move(now));
}

}  // namespace

Result<void> record_and_analyze(const RunResults &results, Store &store, const TrendArgs &args, ReportContext &ctx) {
    if (args.append) {
        auto key = append_history(store, results);
        if (!key) return std::unexpected(key.error());
        fmt::print("history: recorded this run as {}\n", store.where(*key));
    }
    std::vector<HistoryRecord> records;
    std::map<std::string, json::object> fps;
    if (args.trends) {
        auto h = load_history(store, results.suite, results.machine_class, args.last);
        if (!h) return std::unexpected(h.error());
        records = std::move(h->records);
        fps = std::move(h->fingerprints);
    } else {
        for (const auto &r : ctx.history) add_current(records, fps, r);
    }
    if (records.empty() && ctx.history.empty() && !args.trends) return {};
    add_current(records, fps, results);
    ctx.trends = analyze_trends(records, fps);
    return {};
}

namespace {

struct FleetArgs {
    // merge
    std::vector<std::string> shards;
    std::string out = "reports/results.json";
    bool force = false, exit_zero = false;
    StoreArgs store;
    TrendArgs trends;
    std::vector<std::string> history_files;
    ReportPaths reports;
    // history
    std::string suite, machine, machine_class, case_id, kernel, metric = "median_s";
    std::vector<std::string> append;
    size_t last = 60;
    bool json = false, fail_on_drift = false;
};

int cmd_merge(const FleetArgs &a) {
    std::vector<std::pair<std::string, RunResults>> shards;
    for (const auto &f : a.shards) {
        auto r = load_results(f);
        if (!r) return report_error(r.error());
        shards.emplace_back(f, std::move(*r));
    }
    auto merged = merge_shards(std::move(shards), MergeOptions{a.force});
    if (!merged) return report_error(merged.error());
    auto store = open_store(a.store);
    if (!store) return report_error(store.error());
    if (std::find(merged->checks.begin(), merged->checks.end(), CheckName::Cost) != merged->checks.end()) {
        auto pricing = load_pricing(**store);
        if (!pricing) return report_error(pricing.error());
        if (*pricing) {
            auto workloads = load_workloads(**store);
            if (!workloads) return report_error(workloads.error());
            if (auto w = add_workloads(*merged, *workloads, **pricing); !w) return report_error(w.error());
        }
    }
    if (auto w = save_results(*merged, a.out); !w) return report_error(w.error());
    fmt::print("merged {} shard(s): {} case x kernel result(s) in {}\n", a.shards.size(), merged->results.size(), a.out);
    ReportContext ctx;
    if (auto h = load_history(a.history_files, merged->suite); h) ctx.history = std::move(*h);
    else return report_error(h.error());
    if (auto t = record_and_analyze(*merged, **store, a.trends, ctx); !t) return report_error(t.error());
    if (auto w = write_reports(*merged, ctx, a.reports); !w) return report_error(w.error());
    fmt::print("{}", console_summary(*merged, a.out));
    return merged->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

int cmd_history(const FleetArgs &a) {
    auto store = open_store(a.store);
    if (!store) return report_error(store.error());
    for (const auto &f : a.append) {
        auto r = load_results(f);
        if (!r) return report_error(r.error());
        if (r->machine_class.empty()) r->machine_class = machine_class(a.machine);
        auto key = append_history(**store, *r);
        if (!key) return report_error(key.error());
        fmt::print("recorded {} as {}\n", f, (*store)->where(*key));
    }
    if (a.suite.empty()) {
        if (a.append.empty()) return report_error(Error{ErrorKind::Usage, "history: give --suite to print a series, or --append RESULTS"});
        return kExitPass;
    }
    const std::string cls = a.machine_class.empty() ? machine_class(a.machine) : a.machine_class;
    auto h = load_history(**store, a.suite, cls, a.last);
    if (!h) return report_error(h.error());
    if (h->records.empty()) {
        fmt::print("no history for suite {} on machine class \"{}\" in {}\n", a.suite, cls, (*store)->describe());
        return kExitPass;
    }
    TrendOptions opt;
    if (std::find(opt.metrics.begin(), opt.metrics.end(), a.metric) == opt.metrics.end()) opt.metrics.push_back(a.metric);
    const TrendReport t = analyze_trends(h->records, h->fingerprints, opt);
    bool drift = false;
    json::array out;
    for (const auto &s : t.series) {
        if (s.metric != a.metric || (!a.case_id.empty() && s.case_id != a.case_id) || (!a.kernel.empty() && s.kernel != a.kernel)) continue;
        json::array changes;
        for (const auto &c : s.changes) {
            drift = drift || c.point.relative_change() > 0;
            changes.push_back(json::object{{"run", c.run + 1}, {"run_id", t.run_ids[c.run]}, {"relative_change", c.point.relative_change()},
                                           {"p_value", c.point.p_value}, {"description", describe_change(t, s, c)},
                                           {"fingerprint_change_run", c.shift ? json::value(t.shifts[*c.shift].run + 1) : json::value(nullptr)}});
        }
        if (a.json) {
            out.push_back(json::object{{"case", s.case_id}, {"kernel", s.kernel}, {"metric", s.metric},
                                       {"values", json::array(s.values.begin(), s.values.end())}, {"change_points", std::move(changes)}});
            continue;
        }
        fmt::print("{} / {} — {} over {} run(s)\n", s.case_id, s.kernel, s.metric, s.values.size());
        for (size_t i = 0; i < s.values.size(); ++i) {
            const size_t run = s.runs[i];
            std::string mark;
            for (const auto &c : s.changes)
                if (c.point.index == i) mark += fmt::format("  <- change {:+.1f}%", 100.0 * c.point.relative_change());
            for (const auto &f : t.shifts)
                if (f.run == run) mark += "  <- fingerprint changed";
            fmt::print("  {:>4}  {:<22} {:<16} {:>12.6g}{}\n", run + 1, t.run_times[run], h->records[run].fingerprint_id, s.values[i], mark);
        }
        for (const auto &c : s.changes) fmt::print("  change point: {}\n", describe_change(t, s, c));
    }
    if (a.json) fmt::print("{}", pretty_json(out));
    for (const auto &f : t.shifts) {
        if (a.json) break;
        std::string what;
        for (const auto &c : f.changes) what += (what.empty() ? "" : "; ") + c;
        fmt::print("fingerprint changed at run {} ({}): {}\n", f.run + 1, t.run_times[f.run], what.empty() ? "fingerprint not stored" : what);
    }
    return a.fail_on_drift && drift ? kExitDrift : kExitPass;
}

}  // namespace

std::function<int()> add_fleet_commands(CLI::App &app) {
    auto a = std::make_shared<FleetArgs>();
    auto *merge = app.add_subcommand("merge", "merge the results of a sharded run (run/ab --shard I/N) into one, deciding run-wide again");
    merge->add_option("shards", a->shards, "each shard's results.json")->required();
    merge->add_option("-o,--out", a->out, "where the merged results.json goes")->capture_default_str();
    merge->add_flag("--force", a->force, "merge shards whose seeds, plans or fingerprints differ");
    add_store_options(merge, a->store);
    add_trend_options(merge, a->trends);
    merge->add_option("--html", a->reports.html, "write the HTML report here");
    merge->add_option("--markdown", a->reports.markdown, "write the Markdown summary here");
    merge->add_option("--junit", a->reports.junit, "write JUnit XML here");
    merge->add_option("--gbench", a->reports.gbench, "write Google Benchmark JSON here");
    merge->add_option("--history", a->history_files, "earlier results.json files or directories, for trend charts (repeatable)");

    auto *history = app.add_subcommand("history", "print a metric's series over the store's history with change points, or append runs to it");
    history->add_option("--suite", a->suite, "suite name");
    history->add_option("--machine", a->machine, "the machine class name given to run --machine");
    history->add_option("--machine-class", a->machine_class, "the exact machine class (as results.json records it)");
    history->add_option("--case", a->case_id, "only this case");
    history->add_option("--kernel", a->kernel, "only this kernel label");
    history->add_option("--metric", a->metric, "median_s, max_abs_error, nmse, peak_bytes, leak_bytes_per_call or usd_per_mtok")
        ->check(CLI::IsMember(history_metrics()))
        ->capture_default_str();
    history->add_option("--last", a->last, "only the latest N runs (0: all)")->capture_default_str();
    history->add_flag("--json", a->json, "print the series and change points as JSON");
    history->add_flag("--fail-on-drift", a->fail_on_drift, "exit 1 when a change point moves the metric up (slower, bigger)");
    history->add_option("--append", a->append, "append these results.json files to the history (repeatable)");
    add_store_options(history, a->store);
    return [=]() -> int {
        if (*merge) return cmd_merge(*a);
        if (*history) return cmd_history(*a);
        return -1;
    };
}

}  // namespace attngate::cli
