// The registry of subcommands: one line each, explicit (no static initialisers).
#include "command.hpp"

namespace attngate::cli {

const std::vector<AddCommand> &command_registry() {
    static const std::vector<AddCommand> commands = {
        add_run_command,     add_golden_generate_command, add_inputs_command, add_baseline_update_command,
        add_kernels_command, add_report_command,          add_env_command,    add_time_command,
        add_compare_command, add_ab_command,              add_bench_command,  add_suite_coverage_command,
        add_merge_command,   add_history_command,         add_conform_command,
        add_config_command,
        add_init_command,
        add_bisect_command,
    };
    return commands;
}

std::vector<Command> add_commands(CLI::App &app, Console &console) {
    std::vector<Command> commands;
    for (const AddCommand add : command_registry()) {
        commands.push_back(add(app, console));
        add_quiet_option(commands.back().node, console);
    }
    return commands;
}

CLI::App *command_group(CLI::App &parent, const std::string &name, const std::string &description) {
    const std::function<bool(CLI::App *)> named = [&](CLI::App *s) { return s->get_name() == name; };
    if (const auto found = parent.get_subcommands(named); !found.empty()) return found.front();
    CLI::App *group = parent.add_subcommand(name, description);
    group->require_subcommand(1);
    return group;
}

}  // namespace attngate::cli
