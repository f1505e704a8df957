// `attngate time`: timing samples of a suite's case x kernels, and no check (what `ab` runs
// on each side; `time --serve` keeps answering an A/B run's requests).
#include <unistd.h>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "run/plan_timer.hpp"
#include "run/time_server.hpp"

namespace attngate::cli {

namespace {

struct TimeArgs {
    std::string suite, out, outputs;
    KernelSources sources;
    PlanFilter filter;
    int repetitions = 1;
    double min_time_s = 0.02;
    bool no_isolation = false, serve = false, memory = false;
    PerfMetric metric = PerfMetric::Time;
};

/// What --out starts with (a row's case, then its kernel), or is when nothing was timed: how an
/// earlier one is known.
constexpr OutputMark kTimeOutputMark{"[\n  {\n    \"case\": ", "\"kernel\": ", "[]\n"};

/// `time --serve`: answers timing requests on stdin until it ends.
int serve(const Suite &suite, const Plan &plan, Backends &backends, const TimeArgs &a) {
    // The server is the harness's child already: it times in its own process, and what
    // a kernel prints goes to stderr, never into the answers.
    const int reply_fd = ::dup(STDOUT_FILENO);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    PlanTimer timer(suite, plan, backends);
    auto served = serve_timing(timer, TimingRequest{1, a.min_time_s, false, 3600}, stdin, reply_fd);
    return served ? kExitPass : report_error(served.error());
}

int time_rows(TimeArgs a) {
    for (std::string *p : {&a.out, &a.outputs}) *p = absolute_path(*p);  // before a kernel in this process could chdir()
    // Usage first, before any adapter starts.
    if (a.memory && a.outputs.empty()) return report_error(Error{ErrorKind::Usage, "time --memory: only with --outputs (it observes the outputs' calls)"});
    if (a.serve && (!a.out.empty() || !a.outputs.empty() || a.metric != PerfMetric::Time))
        return report_error(Error{ErrorKind::Usage, "time --serve: answers timing requests only (no --out, --outputs or --metric)"});
    if (!a.serve && a.out.empty()) return report_error(Error{ErrorKind::Usage, "time: --out is required (unless --serve)"});
    if (!a.out.empty())
        if (auto ok = replaceable_output("--out", a.out, "samples `attngate time` wrote", kTimeOutputMark); !ok) return report_error(ok.error());
    if (!a.outputs.empty())
        if (auto ok = replaceable_output_dir("--outputs", a.outputs, kPlanOutputsDir); !ok) return report_error(ok.error());
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    std::vector<std::string> origins;
    auto backends = open_backends(a.sources, &origins);
    if (!backends) return report_error(backends.error());
    if (const auto errors = backends->load_errors(); !errors.empty()) {  // what they serve would be missing from the times
        for (const auto &e : errors) print_stderr("error: {}{}\n", kDidNotLoad, terminal_text(e));  // an adapter's words
        return kExitDrift;
    }
    auto plan = make_plan(*suite, backends->kernels(), origins, a.filter);
    if (!plan) return report_error(plan.error());
    if (a.serve) return serve(*suite, *plan, *backends, a);
    if (!a.outputs.empty())
        if (auto w = write_plan_outputs(*suite, *plan, *backends, a.outputs, !a.no_isolation, a.memory); !w) return report_error(w.error());
    TimingRequest request{a.repetitions, a.min_time_s, !a.no_isolation, 3600};
    request.count_instructions = a.metric == PerfMetric::Instructions;
    auto samples = time_plan(*suite, *plan, *backends, request);
    if (!samples) return report_error(samples.error());
    json::array out;
    for (const auto &s : *samples) {
        json::object row{{"case", s.case_id}, {"kernel", s.kernel}};
        if (s.instructions) row["instructions"] = *s.instructions;
        else row["samples_s"] = json::array(s.samples_s.begin(), s.samples_s.end());
        out.push_back(std::move(row));
    }
    if (auto w = write_file_atomic(a.out, pretty_json(out)); !w) return report_error(w.error());
    return kExitPass;
}

}  // namespace

Command add_time_command(CLI::App &app, Console &) {
    auto a = std::make_shared<TimeArgs>();
    auto *cmd = app.add_subcommand("time", "time a suite's case x kernels and write the samples (what ab runs on each side)");
    add_suite_option(cmd, a->suite);
    add_out_option(cmd, a->out, "where the samples go (JSON); required unless --serve");
    add_kernel_source_options(cmd, a->sources);
    add_filter_options(cmd, a->filter);
    cmd->add_option("--repetitions", a->repetitions, "samples per case x kernel")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--min-time", a->min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    cmd->add_flag("--no-isolation", a->no_isolation, "time in this process");
    add_perf_metric_option(cmd, "--metric", a->metric,
                           "time, or instructions: one call's instructions per case x kernel, on one thread, with this process run "
                           "under valgrind --tool=callgrind (what run --perf-metric instructions spawns)");
    cmd->add_option("--outputs", a->outputs, "also write each case x kernel's output as .npy here, with index.json (what ab diffs)");
    cmd->add_flag("--memory", a->memory,
                  "with --outputs: also observe each case x kernel's memory over the suite's memory_calls and write it to "
                  "index.json (what ab's memory check compares)");
    cmd->add_flag("--serve", a->serve,
                  "answer timing requests on stdin until it ends, one JSON line each (what ab keeps running per side; "
                  "see harness/run/time_server.hpp)");
    return {cmd, [a] {
                return run_kernels_supervised(a->no_isolation && !a->serve, "--out was not written", [&] { return time_rows(*a); });
            }};
}

}  // namespace attngate::cli
