// `attngate env`: the dependency and environment fingerprint, or what moved between two.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "report/escape.hpp"
#include "io/json_io.hpp"
#include "report/console.hpp"
#include "results/fingerprint.hpp"

namespace attngate::cli {

namespace {

struct EnvArgs {
    std::vector<std::string> lockfiles, diff;
    KernelSources sources;
    bool json = false;
};

int env(const EnvArgs &a, const Console &console) {
    if (!a.diff.empty()) {
        auto before = load_fingerprint(a.diff[0]);
        if (!before) return report_error(before.error());
        auto after = load_fingerprint(a.diff[1]);
        if (!after) return report_error(after.error());
        console.say("{} -> {}\n{}", terminal_text(a.diff[0]), terminal_text(a.diff[1]), console_fingerprint_diff(diff_fingerprints(*before, *after)));
        return kExitPass;
    }
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    auto fp = collect_fingerprint(backends->kernels(), backends->fingerprint(), a.lockfiles);
    if (!fp) return report_error(fp.error());
    if (a.json) console.data(pretty_json(*fp));
    else console.say("{}", console_fingerprint(*fp));
    return kExitPass;
}

}  // namespace

Command add_env_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<EnvArgs>();
    auto *cmd = app.add_subcommand("env", "print the dependency and environment fingerprint, or diff two");
    cmd->add_option("--lockfile", a->lockfiles, "a lock file of yours to include (repeatable)");
    add_kernel_source_options(cmd, a->sources);
    cmd->add_flag("--json", a->json, "print JSON");
    cmd->add_option("--diff", a->diff, "A.json B.json: what moved from A to B (results or fingerprint files)")->expected(2);
    return {cmd, [a, &console] { return env(*a, console); }};
}

}  // namespace attngate::cli
