// Helpers every subcommand shares: finding the suite, opening the kernels' backends,
// reporting errors.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "io/error.hpp"
#include "options.hpp"
#include "plan/suite.hpp"

namespace attngate::cli {

/// --suite accepts a path, or a name looked up as NAME.json in the configuration's `suites`
/// directory, then ./suites, then the installed share/attngate/suites; a name found in none
/// is a usage error that says where it looked.
Result<Suite> resolve_suite(const std::string &arg);

/// The configuration's `suites` directory, looked in first (main sets it once).
void set_suite_dir(std::optional<std::filesystem::path> dir);

/// The subcommand the command line chose, innermost (`golden generate` -> generate).
CLI::App *chosen_command(CLI::App &app);

/// The backends of a run: the built-in kernels and plugins in this process, then each
/// adapter and remote. `origins` gets every plugin path and adapter URL, in order.
Result<Backends> open_backends(const KernelSources &sources, std::vector<std::string> *origins = nullptr);

/// Prints every kernel source an adapter could not load ("error: ...") and turns a passing
/// exit code into 1: a kernel that no longer loads (a bump broke its import) fails the gate,
/// while the adapter's other kernels still ran.
int with_load_errors(const Backends &backends, int rc);

/// How `time` names a kernel source that did not load ("error: did not load: ..."), before it
/// times anything: `ab` finds it in a build side's error and compares nothing, as it does
/// for an adapter side whose source did not load.
inline constexpr std::string_view kDidNotLoad = "did not load: ";

/// Prints "error: ..." to stderr and returns the exit code for the error's kind. An error about
/// a flag's value that attngate.toml set ("--kernel nope: ...") says where it was set.
int report_error(const Error &e);

/// A flag value that came from the settings file, and its place ("attngate.toml:3").
struct FileSetValue {
    std::string flag, value, where;
};
/// What report_error names the place of: the values the settings file gave this command.
void set_file_set_values(std::vector<FileSetValue> values);

/// body(), in a supervised child when `no_isolation` (kernels share attngate's process): a
/// kernel that ends that process (exit(0), abort(), a fault) makes it exit 1 saying so, never 0,
/// and `what_stays` (what was already written) is said.
int run_kernels_supervised(bool no_isolation, std::string_view what_stays, const std::function<int()> &body);

}  // namespace attngate::cli
