// `attngate conform`: run kernels on cases built to tell conventions apart, print the
// verdicts, exit 1 on a non-conforming kernel.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "report/conformance_report.hpp"
#include "run/conform.hpp"

namespace attngate::cli {

namespace {

struct ConformArgs {
    KernelSources sources;
    ConformOptions options;  ///< bound to the options directly
    std::string json;
};

int conform(ConformArgs a, const Console &console) {
    a.json = absolute_path(a.json);  // before a kernel in this process could chdir()
    if (!a.json.empty())
        if (auto ok = replaceable_output("--json", a.json, "verdicts `attngate conform` wrote", kConformanceJsonMark); !ok) return report_error(ok.error());
    std::vector<std::string> origins;  // the given plugins' paths and adapters' URLs
    auto backends = open_backends(a.sources, &origins);
    if (!backends) return report_error(backends.error());
    // Asked about a plugin or an adapter, conform probes its kernels: the built-ins' conventions
    // are attngate's own (a --kernel names one to compare).
    if (a.options.kernels.empty() && !origins.empty())
        for (const auto *k : backends->kernels())
            if (std::find(origins.begin(), origins.end(), k->origin) != origins.end()) a.options.kernels.push_back(k->name);
    std::string current;
    auto report = run_conformance(*backends, a.options, [&](const KernelConformance &k, const ProbeOutcome &o) {
        if (k.kernel != current) console.say("{} ({})\n", current = k.kernel, k.origin);
        console.say("{}", conformance_line(o));
    });
    if (!report) return report_error(report.error());
    console.say("\n{}", conformance_console(*report));
    if (!a.json.empty())
        if (auto w = write_file_atomic(a.json, pretty_json(conformance_json(*report))); !w) return report_error(w.error());
    return report->pass() ? kExitPass : kExitDrift;  // a kernel source that did not load fails it too
}

}  // namespace

Command add_conform_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<ConformArgs>();
    ConformOptions &o = a->options;
    auto *cmd = app.add_subcommand(
        "conform", "run kernels on cases built to tell conventions apart (causal alignment, scale, bias and soft-cap order, GQA "
                   "mapping, empty rows, NaN at masked keys, bf16 probabilities); exit 1 when one follows neither attngate's "
                   "convention nor the one it declares");
    add_kernel_source_options(cmd, a->sources);
    cmd->add_option("--kernel", o.kernels, "only these kernels (repeatable); default: the given plugins' and adapters' kernels, "
                                           "or the built-ins when none is given");
    cmd->add_option("--json", a->json, "also write the verdicts and every candidate's distance as JSON here");
    cmd->add_flag_callback("--no-isolation", [&o] { o.isolation = false; }, "run in-process kernels in this process (for debugging)");
    cmd->add_option("--timeout", o.timeout_s, "seconds per probe case and kernel")->check(timeout_value());
    return {cmd, [a, &console] {
                return run_kernels_supervised(!a->options.isolation, "--json was not written", [&] { return conform(*a, console); });
            }};
}

}  // namespace attngate::cli
