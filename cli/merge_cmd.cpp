// `attngate merge`: the results of a sharded run (run/ab --shard I/N) as one, decided
// run-wide again.
#include <algorithm>

#include <fmt/format.h>

#include "checks/cost.hpp"
#include "command.hpp"
#include "common.hpp"
#include "report/console.hpp"
#include "report_options.hpp"
#include "run/merge.hpp"
#include "run/workloads.hpp"

namespace attngate::cli {

namespace {

struct MergeArgs {
    std::vector<std::string> shards;
    std::string out = "reports/results.json";
    bool force = false;
    StoreArgs store;
    ReportArgs reports;
};

/// The workloads' cost projections over every shard's cases, when the store prices them.
Result<void> add_costs(RunResults &merged, Store &store) {
    if (std::find(merged.checks.begin(), merged.checks.end(), CheckName::Cost) == merged.checks.end()) return {};
    auto pricing = load_pricing(store);
    if (!pricing) return std::unexpected(pricing.error());
    if (!*pricing) return {};
    auto workloads = load_workloads(store);
    if (!workloads) return std::unexpected(workloads.error());
    return add_workloads(merged, *workloads, **pricing);
}

int merge(const MergeArgs &a, const Console &console) {
    if (auto out = replaceable_results(a.out); !out) return report_error(out.error());
    if (auto ok = replaceable_reports(a.reports.formats, a.out); !ok) return report_error(ok.error());  // before anything is written
    std::vector<std::pair<std::string, RunResults>> shards;
    for (const auto &f : a.shards) {
        auto r = load_results(f);
        if (!r) return report_error(r.error());
        shards.emplace_back(f, std::move(*r));
    }
    auto merged = merge_shards(std::move(shards), MergeOptions{a.force});
    if (!merged) return report_error(merged.error());
    auto store = open_store(a.store, a.reports.trends.append ? StoreUse::Create : StoreUse::Read);  // --append-history may start one
    if (!store) return report_error(store.error());
    if (auto c = add_costs(*merged, **store); !c) return report_error(c.error());
    if (auto w = save_results(*merged, a.out); !w) return report_error(w.error());
    console.say("merged {} shard(s): {} case x kernel result(s) in {}\n", a.shards.size(), merged->results.size(), a.out);
    auto ctx = report_context(a.reports, merged->suite, a.out);
    if (!ctx) return report_error(ctx.error());
    if (auto w = finish_reports(*merged, **store, a.reports, *ctx, console); !w) return report_error(w.error());
    console.say("{}", console_summary(*merged, a.out));
    return merged->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

}  // namespace

Command add_merge_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<MergeArgs>();
    auto *cmd = app.add_subcommand("merge", "merge the results of a sharded run (run/ab --shard I/N) into one, deciding run-wide again");
    cmd->add_option("shards", a->shards, "each shard's results.json")->required();
    add_out_option(cmd, a->out, "where the merged results.json goes")->capture_default_str();
    cmd->add_flag("--force", a->force, "merge shards whose seeds, plans or fingerprints differ");
    add_store_options(cmd, a->store);
    add_report_options(cmd, a->reports);
    return {cmd, [a, &console] { return merge(*a, console); }};
}

}  // namespace attngate::cli
