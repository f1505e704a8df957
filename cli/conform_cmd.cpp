// conform: open the backends, run the probes, print the verdicts, exit 1 on a non-conforming kernel.
#include "conform_cmd.hpp"

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "common.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "report/conformance_report.hpp"
#include "run/conform.hpp"

namespace attngate::cli {

namespace {

struct ConformArgs {
    KernelSources sources;
    ConformOptions options;
    std::string json;
    bool no_isolation = false;
};

int cmd_conform(ConformArgs &a) {
    a.json = absolute_path(a.json);  // before a kernel in this process could chdir()
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    a.options.isolation = !a.no_isolation;
    std::string current;
    auto report = run_conformance(*backends, a.options, [&](const KernelConformance &k, const ProbeOutcome &o) {
        if (k.kernel != current) fmt::print("{} ({})\n", current = k.kernel, k.origin);
        fmt::print("{}", conformance_line(o));
        std::fflush(stdout);
    });
    if (!report) return report_error(report.error());
    fmt::print("\n{}", conformance_console(*report));
    if (!a.json.empty())
        if (auto w = write_file_atomic(a.json, pretty_json(conformance_json(*report))); !w) return report_error(w.error());
    return report->pass() ? kExitPass : kExitDrift;
}

}  // namespace

std::function<int()> add_conform_command(CLI::App &app) {
    auto args = std::make_shared<ConformArgs>();
    auto *cmd = app.add_subcommand(
        "conform", "run kernels on cases built to tell conventions apart (causal alignment, scale, bias and soft-cap order, GQA "
                   "mapping, empty rows, NaN at masked keys, bf16 probabilities); exit 1 when one follows neither attngate's "
                   "convention nor the one it declares");
    add_kernel_source_options(cmd, args->sources);
    cmd->add_option("--kernel", args->options.kernels, "only these kernels (repeatable); default: every loaded kernel");
    cmd->add_option("--json", args->json, "also write the verdicts and every candidate's distance as JSON here");
    cmd->add_flag("--no-isolation", args->no_isolation, "run in-process kernels in this process (for debugging)");
    cmd->add_option("--timeout", args->options.timeout_s, "seconds per probe case and kernel")->check(finite_number(0, 86400));
    return [=]() -> int {
        if (!*cmd) return -1;
        return run_kernels_supervised(args->no_isolation, "--json was not written", [&] { return cmd_conform(*args); });
    };
}

}  // namespace attngate::cli
