// The fleet's commands: `merge` (shard results into one) and `history` (print a series,
// append runs), and the trend and history options `run`, `report` and `merge` share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common.hpp"
#include "report/summary.hpp"
#include "results/results.hpp"

namespace attngate::cli {

/// --append-history, --trends and --history-last of run, report and merge.
struct TrendArgs {
    bool append = false;
    bool trends = false;
    size_t last = 60;
};

void add_trend_options(CLI::App *cmd, TrendArgs &args);

/// Appends the run to the store's history when asked (printing where), and fills
/// ctx.trends from the store's history (with --trends) or the --history results files in
/// ctx.history, plus this run.
Result<void> record_and_analyze(const RunResults &results, Store &store, const TrendArgs &args, ReportContext &ctx);

/// Adds `merge` and `history`; the returned function runs the chosen one (-1: neither).
std::function<int()> add_fleet_commands(CLI::App &app);

}  // namespace attngate::cli
