// Helpers every subcommand shares: finding the suite, opening the kernels' backends,
// reporting errors.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "backend/backend.hpp"
#include "plan/suite.hpp"
#include "store/store.hpp"

namespace attngate::cli {

/// --suite accepts a path or a name of a file in suites/.
Result<Suite> resolve_suite(const std::string &arg);

/// Where kernels come from besides the built-in ones.
struct KernelSources {
    std::vector<std::string> plugins;  ///< --plugin .so files
    std::vector<std::string> adapters;  ///< --adapter command lines, started as children
    std::vector<std::string> remotes;   ///< --remote URLs of adapters already running
    bool builtins = true;               ///< false: no in-process backend unless plugins are given
};

/// Adds --plugin, --adapter and --remote to a subcommand.
void add_kernel_source_options(CLI::App *cmd, KernelSources &sources);

/// The backends of a run: the built-in kernels and plugins in this process, then each
/// adapter and remote. `origins` gets every plugin path and adapter URL, in order.
Result<Backends> open_backends(const KernelSources &sources, std::vector<std::string> *origins = nullptr);

/// Prints every kernel source an adapter could not load ("error: ...") and turns a passing
/// exit code into 1: a kernel that no longer loads (a bump broke its import) fails the gate,
/// while the adapter's other kernels still ran.
int with_load_errors(const Backends &backends, int rc);

/// Where goldens, baselines, pricing, workloads and history are kept.
struct StoreArgs {
    std::string store;                 ///< --store URL or directory
    std::string baselines = "baselines";  ///< --baselines DIR (a directory store)
    CLI::Option *baselines_option = nullptr;
};

/// Adds --store and --baselines to a subcommand.
void add_store_options(CLI::App *cmd, StoreArgs &args);

/// --store, else an explicit --baselines, else $ATTNGATE_STORE, else the baselines/ directory.
Result<std::unique_ptr<Store>> open_store(const StoreArgs &args);

/// Accepts a finite number x with low < x (low <= x when low_closed) and x <= high. CLI11's
/// PositiveNumber and Range let NaN through (every comparison with NaN is false), which made
/// `--timeout nan` a timeout that never fires and `--alpha nan` a test that never rejects.
CLI::Validator finite_number(double low, double high, bool low_closed = false);

/// Prints "error: ..." to stderr and returns the exit code for the error's kind.
int report_error(const Error &e);

/// body(), in a supervised child when `no_isolation` (kernels share attngate's process): a
/// kernel that ends that process (exit(0), abort(), a fault) makes it exit 1 saying so, never 0,
/// and `what_stays` (what was already written) is said.
int run_kernels_supervised(bool no_isolation, std::string_view what_stays, const std::function<int()> &body);

}  // namespace attngate::cli
