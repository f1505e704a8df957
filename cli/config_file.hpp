// attngate.toml: one file of settings for a team's repository, found in the working
// directory or its parents as pyproject.toml is. Each key fills the flag of the same
// meaning on every subcommand that has it; a flag on the command line beats the file, and
// the file beats the default. Only cli/ reads it: harness/ never learns where a value came from.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "io/error.hpp"

namespace attngate::cli {

/// One value of the file: the key ("suite", "report.html"), its value as the flag's
/// arguments (paths already made absolute from the file's directory), and where it stands.
struct ConfigValue {
    std::string key;
    std::vector<std::string> args;
    std::string where;  ///< "/repo/attngate.toml:3"
};

/// A parsed, checked attngate.toml.
struct ConfigFile {
    std::filesystem::path path;
    std::vector<ConfigValue> values;

    const ConfigValue *find(std::string_view key) const;
};

/// The file's name: attngate.toml.
inline constexpr std::string_view kConfigName = "attngate.toml";

/// The nearest attngate.toml in `start` or a parent directory, or nullopt.
std::optional<std::filesystem::path> find_config(const std::filesystem::path &start);

/// Reads and checks the file with toml++: a syntax error, an unknown key, a value of the
/// wrong type and a file it names that does not exist are each bad input naming file:line
/// and the key.
Result<ConfigFile> load_config(const std::filesystem::path &file);

/// The settings for this process: `--config FILE` in argv, else $ATTNGATE_CONFIG, else the
/// nearest attngate.toml; nullopt when there is none. `--config` naming no file is bad input.
Result<std::optional<ConfigFile>> config_for(const std::vector<std::string> &argv);

/// Before parsing: everything after `config` becomes its arguments (`attngate config run
/// --plugin x` shows what `run --plugin x` would use), as if after "--".
std::vector<std::string> config_command_argv(std::vector<std::string> argv);

/// Before parsing: an option the file fills is no longer required on the command line.
void relax_required(CLI::App &app, const ConfigFile &config);

/// A setting as a subcommand sees it, and where its value came from.
struct Setting {
    std::string key;
    std::string flag;
    std::string value;   ///< the arguments joined by ", " (empty: unset)
    std::string origin;  ///< "attngate.toml:3", "flag --suite", "default", or "unset"
};

/// After parsing: fills each option of `cmd` that the command line left unset from the
/// file, and returns every setting `cmd` has with its origin. `config` may be null. A file the
/// value names that does not exist is bad input, or with `report_missing` (`attngate config`,
/// before the plugin is built) said in the origin.
Result<std::vector<Setting>> apply_config(CLI::App *cmd, const ConfigFile *config, bool report_missing = false);

/// The directory suite names are looked up in first (the file's `suites`), if any.
std::optional<std::filesystem::path> config_suites_dir(const ConfigFile *config);

}  // namespace attngate::cli
