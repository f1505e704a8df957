// attngate's command line: parse, call the library, choose the exit code. The only place
// that prints errors and exits.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backend/memory.hpp"
#include "command.hpp"
#include "common.hpp"
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

}  // namespace

int main(int argc, char **argv) {
    exec_with_exact_heap_accounting(argv);
    start_directory();  // read now, before any kernel could chdir(): children start there
    CLI::App app{"attngate: the regression gate for attention kernels (golden outputs, memory, throughput, cost)"};
    app.require_subcommand(1);
    app.set_version_flag("--version", tool_version());
    cli::Console console;
    std::vector<cli::Command> commands;
    for (const cli::AddCommand add : cli::command_registry()) {
        commands.push_back(add(app, console));
        cli::add_quiet_option(commands.back().node, console);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        app.exit(e);
        return kExitBadInput;
    }
    // CI templates are checked by parsing each attngate command they run with the real CLI.
    if (const char *p = std::getenv("ATTNGATE_PARSE_ONLY"); p && std::string(p) == "1") {
        fmt::print("parsed: {}\n", app.get_subcommands().front()->get_name());
        return kExitPass;
    }
    return dispatch(commands);
}
