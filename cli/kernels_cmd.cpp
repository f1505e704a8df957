// `attngate kernels`: the kernels every source offers and what they support.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "report/escape.hpp"
#include "io/json_io.hpp"

namespace attngate::cli {

namespace {

struct KernelsArgs {
    KernelSources sources;
    bool json = false;
};

/// One kernel as JSON: name, version, description, origin and its features by name.
json::object kernel_json(const KernelInfo &k) {
    json::array features;
    for (const auto &name : feature_list(k.features)) features.push_back(json::string(name));
    return {{"name", k.name}, {"version", k.version}, {"description", k.description}, {"origin", k.origin}, {"features", std::move(features)}};
}

int list(const KernelsArgs &a, const Console &console) {
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    json::array all;
    for (const auto *k : backends->kernels()) {
        if (a.json) all.push_back(kernel_json(*k));
        else
            console.say("{:<14} {:<10} {}\n{:<14} from {}; supports: {}\n", terminal_text(k->name), terminal_text(k->version),
                        terminal_text(k->description), "", terminal_text(k->origin),
                        feature_names(k->features));
    }
    if (a.json) console.data(pretty_json(json::object{{"kernels", std::move(all)}}));
    return with_load_errors(*backends, kExitPass);
}

}  // namespace

Command add_kernels_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<KernelsArgs>();
    auto *cmd = app.add_subcommand("kernels", "list kernels and what they support");
    add_kernel_source_options(cmd, a->sources);
    cmd->add_flag("--json", a->json, "print the kernels as JSON: name, version, description, origin, features");
    return {cmd, [a, &console] { return list(*a, console); }};
}

}  // namespace attngate::cli
