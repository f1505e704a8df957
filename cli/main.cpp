// attngate's command line: parse, call the library, choose the exit code. The only place
// that prints errors and exits.
#include <algorithm>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/memory.hpp"
#include "command.hpp"
#include "common.hpp"
#include "config_file.hpp"
#include "io/process.hpp"
#include "run/run.hpp"

using namespace attngate;

namespace {

/// Runs the parsed subcommand. std::filesystem is a library boundary like Boost.JSON: a path
/// it cannot stat (a symlink loop, an over-long name) that slipped past an error_code
/// overload is bad input, not abort().
int dispatch(const std::vector<cli::Command> &commands) {
    try {
        for (const auto &c : commands)
            if (c.node->parsed()) return c.run();
        return kExitBadInput;  // unreachable: CLI11 requires a subcommand
    } catch (const std::filesystem::filesystem_error &e) {
        return cli::report_error(Error{ErrorKind::BadInput, fmt::format("{}: {}", e.path1().string(), e.code().message())});
    }
}

/// "attngate 0.2.0 (commit 1a2b3c4)".
std::string version_text() { return fmt::format("{} (commit {})", tool_version(), ATTNGATE_COMMIT); }

/// CLI11's exit (help, version, a parse error) through the console's writers: its exit code.
int parse_exit(const CLI::App &app, const CLI::Error &e) {
    std::ostringstream out, err;
    const int rc = app.exit(e, out, err);
    cli::write_stdout(out.str());
    cli::write_stderr(err.str());
    return rc;
}

/// The first word of argv that is not an option, when it names no command: CLI11 would say
/// only "A subcommand is required" of `attngate frobnicate`.
std::optional<Error> unknown_command(const CLI::App &app, const std::vector<std::string> &argv) {
    for (size_t i = 1; i < argv.size(); ++i) {
        if (argv[i] == "--config") {
            ++i;
            continue;
        }
        if (argv[i].starts_with("-")) continue;
        std::vector<std::string> names;
        for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; })) {
            if (sub->check_name(argv[i])) return std::nullopt;
            names.push_back(sub->get_name());
        }
        return Error{ErrorKind::Usage, fmt::format("unknown command \"{}\" (commands: {})", argv[i], fmt::join(names, ", "))};
    }
    return std::nullopt;
}

/// Levenshtein distance between two short words: how far a mistyped flag is from a real one.
size_t edit_distance(const std::string &a, const std::string &b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// The command chosen on the command line ("baseline update"), or nullptr when none was.
const CLI::App *chosen(const CLI::App &app, std::string &name) {
    const auto subs = app.get_subcommands();
    if (subs.empty()) return nullptr;
    const CLI::App *cmd = subs.front();
    while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();  // baseline update, golden generate
    name = cmd->get_name();
    for (const CLI::App *a = cmd->get_parent(); a && a->get_parent(); a = a->get_parent()) name = a->get_name() + " " + name;
    return cmd;
}

/// The first --flag of argv that the chosen command does not have, named with the nearest one
/// it has: CLI11 would say only "The following arguments were not expected: 5 --thresold-pct",
/// or of `--sute`, that --suite is required.
std::optional<Error> unknown_option(const CLI::App &app, const std::vector<std::string> &argv) {
    std::string name;
    const CLI::App *cmd = chosen(app, name);
    if (!cmd) return std::nullopt;
    std::vector<std::string> flags;
    for (const CLI::App *a = cmd; a; a = a->get_parent())
        for (const CLI::Option *o : a->get_options())
            for (const std::string &n : o->get_lnames()) flags.push_back("--" + n);
    for (size_t i = 1; i < argv.size(); ++i) {
        if (argv[i] == "--") break;
        if (!argv[i].starts_with("--")) continue;
        const std::string flag = argv[i].substr(0, argv[i].find('='));
        if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
        const auto nearest = std::min_element(flags.begin(), flags.end(), [&](const std::string &x, const std::string &y) {
            return edit_distance(flag, x) < edit_distance(flag, y);
        });
        const std::string hint = nearest != flags.end() && edit_distance(flag, *nearest) <= 2
                                     ? fmt::format("did you mean {}?", *nearest)
                                     : fmt::format("see attngate {} --help", name);
        return Error{ErrorKind::Usage, fmt::format("unknown option {} for \"{}\" ({})", flag, name, hint)};
    }
    return std::nullopt;
}

}  // namespace

int main(int argc, char **argv) {
    exec_with_exact_heap_accounting(argv);
    cli::prepare_standard_streams();
    start_directory();  // read now, before any kernel could chdir(): children start there
    CLI::App app{"attngate: the regression gate for attention kernels (golden outputs, memory, throughput, cost)", "attngate"};
    app.require_subcommand(1);
    app.set_version_flag("--version", version_text());
    app.fallthrough();  // --config after the subcommand too
    app.add_option("--config", "the settings file (default: the nearest attngate.toml from here up, or $ATTNGATE_CONFIG)");
    cli::Console console;
    const std::vector<cli::Command> commands = cli::add_commands(app, console);
    // The file is read before parsing, so that a setting it holds (--suite) is not required on
    // the command line; a bad file is said after parsing, so --help and --version still work.
    const auto config = cli::config_for(std::vector<std::string>(argv + 1, argv + argc));
    if (config && *config) cli::relax_required(app, **config);
    try {
        std::vector<std::string> args = cli::config_command_argv(std::vector<std::string>(argv, argv + argc));
        std::reverse(args.begin(), args.end());  // CLI11 takes them last first
        args.pop_back();                         // the program's name
        app.parse(args);
    } catch (const CLI::CallForHelp &e) {
        return cli::with_stdout_checked(parse_exit(app, e));
    } catch (const CLI::CallForAllHelp &e) {
        return cli::with_stdout_checked(parse_exit(app, e));
    } catch (const CLI::CallForVersion &e) {
        return cli::with_stdout_checked(parse_exit(app, e));
    } catch (const CLI::ParseError &e) {
        if (!config) return cli::report_error(config.error());  // the cause of "--suite is required"
        const std::vector<std::string> words(argv, argv + argc);
        if (auto unknown = unknown_command(app, words)) return cli::report_error(*unknown);
        if (auto unknown = unknown_option(app, words)) return cli::report_error(*unknown);  // before "--suite is required" of --sute
        std::string name;
        if (!chosen(app, name)) {
            parse_exit(app, e);
            return kExitBadInput;
        }
        // As every other bad input: "error: --checks: unknown check ...", and where help is.
        return cli::report_error({ErrorKind::Usage, fmt::format("{} (see attngate {} --help)", e.what(), name)});
    }
    if (!config) return cli::report_error(config.error());
    const cli::ConfigFile *file = *config ? &**config : nullptr;
    const auto applied = cli::apply_config(cli::chosen_command(app), file);
    if (!applied) return cli::report_error(applied.error());
    if (auto apart = cli::settings_apart(*cli::chosen_command(app), *applied)) return cli::report_error(*apart);
    cli::set_suite_dir(cli::config_suites_dir(file));
    // CI templates are checked by parsing each attngate command they run with the real CLI.
    if (const char *p = std::getenv("ATTNGATE_PARSE_ONLY"); p && std::string(p) == "1") {
        cli::write_stdout(fmt::format("parsed: {}\n", app.get_subcommands().front()->get_name()));
        return cli::with_stdout_checked(kExitPass);
    }
    return cli::with_stdout_checked(dispatch(commands));
}
