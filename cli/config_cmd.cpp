// `attngate config [SUBCOMMAND [FLAGS...]]`: every setting SUBCOMMAND (default run) would
// use, and where each came from: attngate.toml and its line, a flag, or the default.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "config_file.hpp"
#include "report/escape.hpp"

namespace attngate::cli {

namespace {

void never_required(CLI::App &app) {
    for (CLI::Option *o : app.get_options()) o->required(false);
    for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; })) never_required(*sub);
}

int show(const std::vector<std::string> &rest, const Console &console) {
    auto config = config_for(rest);
    if (!config) return report_error(config.error());
    CLI::App app;
    app.require_subcommand(1);
    Console quiet;
    const auto commands = add_commands(app, quiet);  // they own what the options write to
    never_required(app);
    std::vector<std::string> argv{"attngate"};
    if (rest.empty() || rest.front().starts_with("-")) argv.push_back("run");
    argv.insert(argv.end(), rest.begin(), rest.end());
    std::vector<const char *> c_argv;
    for (const auto &a : argv) c_argv.push_back(a.c_str());
    try {
        app.parse(static_cast<int>(c_argv.size()), c_argv.data());
    } catch (const CLI::ParseError &e) {
        return report_error(Error{ErrorKind::Usage, fmt::format("config: {}", e.what())});
    }
    CLI::App *cmd = chosen_command(app);
    auto settings = apply_config(cmd, *config ? &**config : nullptr, /*report_missing=*/true);
    if (!settings) return report_error(settings.error());
    console.say("{}", *config ? fmt::format("config file: {}", (*config)->path.string())
                              : fmt::format("config file: none ({} in no directory from here up)", kConfigName));
    console.say("\n");
    console.say("settings of `attngate {}`:\n", cmd->get_parent() && cmd->get_parent()->get_parent() ? cmd->get_parent()->get_name() + " " + cmd->get_name()
                                                                                                 : cmd->get_name());
    size_t width = 0;
    for (const auto &s : *settings) width = std::max(width, s.key.size());
    for (const auto &s : *settings)
        console.say("  {:<{}} = {:<40}  ({})\n", s.key, width, terminal_text(s.value), terminal_text(s.origin));
    if (auto apart = settings_apart(*cmd, *settings)) return report_error(*apart);  // what the subcommand would refuse
    return kExitPass;
}

}  // namespace

Command add_config_command(CLI::App &app, Console &console) {
    auto cmd = app.add_subcommand("config", "print every setting a subcommand (default run) would use, and where it came from: "
                                            "attngate.toml and its line, a flag, or the default");
    auto rest = std::make_shared<std::vector<std::string>>();
    cmd->add_option("command", *rest, "the subcommand and its flags, applied as it would apply them (default: run)");
    cmd->footer("Example: attngate config ab --a-plugin old.so --b-plugin new.so");
    return {cmd, [rest, &console] { return show(*rest, console); }};
}

}  // namespace attngate::cli
