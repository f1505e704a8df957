// `attngate golden generate`: every case's golden output from the fp64 reference, and the
// fingerprint (the kernels' sources included) that runs are compared with.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "results/fingerprint.hpp"
#include "run/golden_generate.hpp"
#include "store/golden.hpp"

namespace attngate::cli {

namespace {

struct GoldenArgs {
    std::string suite;
    StoreArgs store;
    KernelSources sources;  ///< recorded in the goldens' fingerprint: what `run` will compare it with
    std::vector<std::string> lockfiles;
};

int generate(const GoldenArgs &a, const Console &console) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    auto store = open_store(a.store, StoreUse::Create);
    if (!store) return report_error(store.error());
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    auto fp = collect_fingerprint(backends->kernels(), backends->fingerprint(), a.lockfiles);
    if (!fp) return report_error(fp.error());
    auto m = generate_goldens(*suite, **store, [&console](const GoldenEntry &e) {
        console.say("golden {:<28} max|out| {:.3g}  straightforward err {:.3g}  {}\n", e.case_id, e.output_max_abs,
                    e.straightforward_max_abs_error, e.file);
    }, &*fp);
    if (!m) return report_error(m.error());
    console.say("wrote {} goldens and manifest.json to {}\n", m->cases.size(), (*store)->where("goldens/" + suite->name));
    return kExitPass;
}

}  // namespace

Command add_golden_generate_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<GoldenArgs>();
    auto *golden = command_group(app, "golden", "goldens: the fp64 reference outputs");
    auto *cmd = golden->add_subcommand("generate", "compute every case's golden with the reference kernel");
    add_suite_option(cmd, a->suite);
    add_store_options(cmd, a->store);
    // The goldens come from the fp64 reference whatever the kernels; a team's plugins and
    // adapters go into their fingerprint, so that a run of them is compared with a baseline
    // that has them, not told they were "added".
    add_kernel_source_options(cmd, a->sources);
    cmd->add_option("--lockfile", a->lockfiles, "a lock file of yours to record in the baseline's fingerprint (repeatable)");
    return {cmd, [a, &console] { return generate(*a, console); }};
}

}  // namespace attngate::cli
