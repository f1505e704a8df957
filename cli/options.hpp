// The option groups subcommands share, each added by one function so that a flag means
// the same everywhere: the suite, the output file, the kernels' sources, the plan filter,
// the store and the perf rule. (The report formats are in report_options.hpp.)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config_file.hpp"
#include "plan/plan.hpp"
#include "plan/shard.hpp"
#include "run/perf_phase.hpp"
#include "stats/perf_decision.hpp"
#include "store/store.hpp"

namespace attngate::cli {

/// Adds the required --suite (a path, or a name of a file in suites/).
void add_suite_option(CLI::App *cmd, std::string &suite);

/// Adds -o/--out: where the command's one output file or directory goes.
CLI::Option *add_out_option(CLI::App *cmd, std::string &path, const std::string &what);

/// Where kernels come from besides the built-in ones.
struct KernelSources {
    std::vector<std::string> plugins;   ///< --plugin .so files
    std::vector<std::string> adapters;  ///< --adapter command lines, started as children
    std::vector<std::string> remotes;   ///< --remote URLs of adapters already running
    bool builtins = true;               ///< false: no in-process backend unless plugins are given
};

/// Adds --plugin, --adapter and --remote.
void add_kernel_source_options(CLI::App *cmd, KernelSources &sources);

/// Adds --kernel and --case (repeatable): only these of the plan.
void add_filter_options(CLI::App *cmd, PlanFilter &filter);

/// Where goldens, baselines, pricing, workloads and history are kept.
struct StoreArgs {
    std::string store;                    ///< --store URL or directory
    std::string baselines = "baselines";  ///< --baselines DIR (a directory store)
    CLI::Option *baselines_option = nullptr;
};

/// Adds --store and --baselines.
void add_store_options(CLI::App *cmd, StoreArgs &args);

/// What a command does with the store: only reads it (run, ab, report, merge, history), or may
/// make it (golden generate, baseline update).
enum class StoreUse { Read, Create };

/// --store, else an explicit --baselines, else $ATTNGATE_STORE, else the baselines/ directory,
/// over the installed data. A local directory given on purpose that does not exist is a usage
/// error for a command that only reads.
Result<std::unique_ptr<Store>> open_store(const StoreArgs &args, StoreUse use);

/// Adds --threshold-pct (a percent, stored as the policy's fraction) and --alpha.
void add_policy_options(CLI::App *cmd, DecisionPolicy &policy);

/// Adds `flag` (run --perf-metric, time --metric): "time" or "instructions", parsed here to
/// the PerfMetric the library takes, bound as the enum itself.
void add_perf_metric_option(CLI::App *cmd, const std::string &flag, PerfMetric &metric, const std::string &what);

/// Adds --shard I/N, parsed here: a malformed one is a usage error before anything runs.
void add_shard_option(CLI::App *cmd, std::optional<ShardSpec> &shard, const std::string &what);

/// Accepts a finite number x with low < x (low <= x when low_closed) and x <= high. CLI11's
/// PositiveNumber and Range let NaN through (every comparison with NaN is false), which made
/// `--timeout nan` a timeout that never fires and `--alpha nan` a test that never rejects.
CLI::Validator finite_number(double low, double high, bool low_closed = false);

/// The values a flag and its attngate.toml key accept, one definition for both: --threshold-pct,
/// --alpha, --timeout, and each of `run --checks`.
CLI::Validator threshold_pct_value();
CLI::Validator alpha_value();
CLI::Validator timeout_value();
CLI::Validator check_name();
/// Settings of `cmd` that do not go together, said where they came from: run's `checks`
/// (checks_apart: "/repo/attngate.toml:7: checks: cost without perf ..."); nullopt when none.
std::optional<Error> settings_apart(const CLI::App &cmd, const std::vector<Setting> &settings);
/// --machine and --device-class: a name, never "" (which would silently mean the default).
CLI::Validator non_empty_name();

}  // namespace attngate::cli
