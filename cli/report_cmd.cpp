// `attngate report`: the report files of a results.json, at any time after its run.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "report_options.hpp"

namespace attngate::cli {

namespace {

struct ReportCmdArgs {
    std::string results;
    ReportArgs reports;
    bool exit_code = false;
    StoreArgs store;
};

int report(const ReportCmdArgs &a, const Console &console) {
    if (!a.reports.formats.any())
        return report_error(Error{ErrorKind::Usage, fmt::format("report: nothing to write (give {})", report_flags_said())});
    auto results = load_results(a.results);
    if (!results) return report_error(results.error());
    auto ctx = report_context(a.reports, results->suite);
    if (!ctx) return report_error(ctx.error());
    auto store = open_store(a.store, a.reports.trends.append ? StoreUse::Create : StoreUse::Read);  // --append-history may start one
    if (!store) return report_error(store.error());
    if (auto w = finish_reports(*results, **store, a.reports, *ctx, console); !w) return report_error(w.error());
    return a.exit_code && results->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

}  // namespace

Command add_report_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<ReportCmdArgs>();
    auto *cmd = app.add_subcommand("report", "write HTML, Markdown, JUnit and Google Benchmark reports from a results.json");
    cmd->add_option("results", a->results, "results.json of a run")->required();
    add_report_options(cmd, a->reports);
    cmd->add_flag("--exit-code", a->exit_code, "exit 1 when the results' verdict is fail");
    add_store_options(cmd, a->store);
    return {cmd, [a, &console] { return report(*a, console); }};
}

}  // namespace attngate::cli
