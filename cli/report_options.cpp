// The report options and the flow from results to report files.
#include "report_options.hpp"

#include <map>

#include "results/trends.hpp"
#include "store/history.hpp"

namespace attngate::cli {

void add_report_format_options(CLI::App *cmd, ReportPaths &paths) {
    for (const auto &format : report_formats())
        cmd->add_option("--" + std::string(format.name), paths.paths[std::string(format.name)], std::string(format.help));
}

void add_report_options(CLI::App *cmd, ReportArgs &args) {
    add_report_format_options(cmd, args.formats);
    cmd->add_option("--history", args.history, "earlier results.json files or directories, for trend charts (repeatable)");
    cmd->add_flag("--append-history", args.trends.append, "append this run's compact record to the store's history");
    cmd->add_flag("--trends", args.trends.trends, "draw trends and change points from the store's history for this suite and machine class");
    cmd->add_option("--history-last", args.trends.last, "how many of the latest history runs trends read")
        ->check(CLI::Range(0, 1000000))->capture_default_str();
}

Result<ReportContext> report_context(const ReportArgs &args, const std::string &suite, const std::string &results) {
    if (auto ok = replaceable_reports(args.formats, results); !ok) return std::unexpected(ok.error());
    ReportContext ctx;
    auto history = load_history(args.history, suite);
    if (!history) return std::unexpected(history.error());
    ctx.history = std::move(*history);
    return ctx;
}

namespace {

/// The current run as a record, unless the history already ends with it.
void add_current(std::vector<HistoryRecord> &records, std::map<std::string, json::object> &fps, const RunResults &r) {
    HistoryRecord now = history_record(r, r.started_at);
    if (!records.empty() && records.back().at == now.at && records.back().fingerprint_id == now.fingerprint_id) return;
    if (!now.fingerprint_id.empty()) fps.emplace(now.fingerprint_id, r.fingerprint);
    records.push_back(std::move(now));
}

Result<void> record_and_analyze(const RunResults &results, Store &store, const TrendArgs &args, ReportContext &ctx, const Console &console) {
    if (args.append && !not_a_data_point(results).empty()) {
        console.say("history: not recorded: {}\n", not_a_data_point(results));  // the reports are still written
    } else if (args.append) {
        auto key = append_history(store, results);
        if (!key) return std::unexpected(key.error());
        console.say("history: recorded this run as {}\n", store.where(*key));
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

}  // namespace

Result<void> finish_reports(const RunResults &results, Store &store, const ReportArgs &args, ReportContext &ctx, const Console &console) {
    if (auto t = record_and_analyze(results, store, args.trends, ctx, console); !t) return t;
    return write_reports(results, ctx, args.formats);
}

}  // namespace attngate::cli
