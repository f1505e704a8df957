// The one shape every subcommand is registered in, and the registry that lists them all.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "console.hpp"

namespace attngate::cli {

/// A registered subcommand: its CLI11 node, and what runs it once the command line is
/// parsed (returning the exit code: kExitPass, kExitDrift, kExitBadInput or kExitInfra).
struct Command {
    CLI::App *node = nullptr;
    std::function<int()> run;
};

/// Adds one subcommand (its options and arguments) to `app`. The returned runner reads
/// the parsed options and may print through `console`, which outlives it.
using AddCommand = Command (*)(CLI::App &app, Console &console);

/// Every subcommand, in the order `attngate --help` lists them (cli/commands.cpp).
const std::vector<AddCommand> &command_registry();

/// Adds every subcommand of the registry to `app`, each with -q/--quiet.
std::vector<Command> add_commands(CLI::App &app, Console &console);

/// `parent`'s subcommand `name`, made (requiring one subcommand of its own) if it is not
/// there yet: the group of `golden generate`, `baseline update`, `suite coverage`.
CLI::App *command_group(CLI::App &parent, const std::string &name, const std::string &description);

Command add_run_command(CLI::App &app, Console &console);
Command add_golden_generate_command(CLI::App &app, Console &console);
Command add_inputs_command(CLI::App &app, Console &console);
Command add_baseline_update_command(CLI::App &app, Console &console);
Command add_kernels_command(CLI::App &app, Console &console);
Command add_report_command(CLI::App &app, Console &console);
Command add_env_command(CLI::App &app, Console &console);
Command add_time_command(CLI::App &app, Console &console);
Command add_compare_command(CLI::App &app, Console &console);
Command add_ab_command(CLI::App &app, Console &console);
Command add_bench_command(CLI::App &app, Console &console);
Command add_suite_coverage_command(CLI::App &app, Console &console);
Command add_merge_command(CLI::App &app, Console &console);
Command add_history_command(CLI::App &app, Console &console);
Command add_conform_command(CLI::App &app, Console &console);
Command add_config_command(CLI::App &app, Console &console);
Command add_init_command(CLI::App &app, Console &console);
Command add_bisect_command(CLI::App &app, Console &console);

}  // namespace attngate::cli
