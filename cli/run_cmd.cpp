// `attngate run`: gate a suite's cases on its kernels against the baselines.
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/files.hpp"
#include "report/console.hpp"
#include "report_options.hpp"
#include "run/perf_phase.hpp"
#include "run/run.hpp"

namespace attngate::cli {

namespace {

struct RunArgs {
    std::string suite;
    std::string out = "reports/results.json";
    StoreArgs store;
    KernelSources sources;
    RunOptions options;  ///< bound to the options directly; the CLI fills in the rest
    ReportArgs reports;
};

/// Each case x kernel's table line on stdout (only the failures while a live progress line
/// on the same terminal shows the rest), and the progress on stderr.
ProgressFn case_printer(const Console &console, Progress &progress) {
    const bool terminal = ::isatty(STDOUT_FILENO) != 0;
    return [&console, &progress, terminal, header = false](const CaseResult &r, size_t done, size_t total) mutable {
        if (!(progress.live() && terminal) || is_failing(r.verdict())) {
            progress.clear();
            if (!header) console.say("{}", console_header()), header = true;
            console.say("{}", console_line(r, done, total));
        }
        progress.update(done, total, r.case_id + " / " + r.kernel);
    };
}

int run(RunArgs a, const Console &console) {
    const std::string shown_out = a.out;
    // Every output path is fixed before the first kernel: one in this process may chdir().
    a.out = absolute_path(a.out);
    for (auto &[format, path] : a.reports.formats.paths) path = absolute_path(path);
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    RunOptions &opt = a.options;
    auto backends = open_backends(a.sources, &opt.extra_origins);
    if (!backends) return report_error(backends.error());
    auto store = open_store(a.store, a.reports.trends.append ? StoreUse::Create : StoreUse::Read);  // --append-history may start one
    if (!store) return report_error(store.error());
    opt.store = store->get();
    opt.results_path = a.out;
    opt.perf.plugins = a.sources.plugins;  // the instruction-counting child loads them too
    auto ctx = report_context(a.reports, suite->name, a.out);
    if (!ctx) return report_error(ctx.error());
    Progress progress(console, "run " + suite->name, "case x kernels");
    std::optional<Progress> timing;  // one per timed set
    const TimingProgressFn on_timing = [&](size_t done, size_t total, const std::string &what) {
        if (done == 0) {
            progress.finish();
            timing.reset();
            timing.emplace(console, "run " + suite->name + " perf", "repetitions timed");
        }
        timing->update(done, total, what);
    };
    const auto replaced = [&a] { return remove_earlier_reports(a.reports.formats); };
    auto results = run_suite(*suite, *backends, opt, {case_printer(console, progress), on_timing, replaced});
    progress.finish();
    timing.reset();
    if (!results) return report_error(results.error());
    // The results are written before the history is touched: a store failure loses nothing.
    const auto reported = finish_reports(*results, **store, a.reports, *ctx, console);
    console.say("{}", console_summary(*results, shown_out));
    if (!reported) return report_error(reported.error());
    return results->verdict() == Verdict::Fail ? kExitDrift : kExitPass;  // a source that did not load fails it
}

void add_perf_options(CLI::App *cmd, RunOptions &o) {
    PerfChoices &perf = o.perf;
    cmd->add_option("--machine", o.machine, "a name for this machine class (perf baselines are kept per class)")->check(non_empty_name());
    cmd->add_option("--device-class", o.device_class, "the pricing.json entry this machine's time is priced as")->capture_default_str()->check(non_empty_name());
    cmd->add_flag("--strict", perf.strict,
                  "dedicated runners: a timed case the perf rule cannot gate (too noisy, no baseline) fails instead of skipping");
    cmd->add_flag_callback("--no-calibration", [&perf] { perf.calibrate = false; },
                  "gate absolute times instead of times relative to the calibration workload timed with the cases (still timed: "
                  "a verdict that the machine's change of speed could explain is not gated either way)");
    add_perf_metric_option(cmd, "--perf-metric", perf.metric,
                           "time, or instructions: one call's instructions counted under valgrind's callgrind, gated with the plain "
                           "threshold (check \"instructions\", baselines kept per machine class)");
    cmd->add_option("--workload-kernel", perf.workload_kernel,
                    "the kernel (suite label or plugin kernel) every workload's cost projection uses, instead of the workload's own");
}

}  // namespace

Command add_run_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<RunArgs>();
    RunOptions &o = a->options;
    o.checks = {"golden", "memory", "perf", "cost"};
    auto *cmd = app.add_subcommand("run", "run a suite's cases on its kernels and gate them against baselines");
    add_suite_option(cmd, a->suite);
    add_store_options(cmd, a->store);
    add_out_option(cmd, a->out, "where results.json goes")->capture_default_str();
    cmd->add_option("--checks", o.checks, "checks to run: golden, memory, perf, cost (comma-separated)")
        ->delimiter(',')
        ->check(check_name())
        ->capture_default_str();
    cmd->add_flag_callback("--no-isolation", [&o] { o.isolation = false; }, "run kernels in this process (for debugging; a crash ends the run with exit 1)");
    cmd->add_option("--timeout", o.timeout_s, "seconds per case x kernel before an isolated kernel counts as hung")
        ->check(timeout_value());
    add_kernel_source_options(cmd, a->sources);
    add_filter_options(cmd, o.filter);
    cmd->add_option("--lockfile", o.lockfiles, "a lock file of yours to record in the fingerprint (repeatable)");
    add_perf_options(cmd, o);
    add_report_options(cmd, a->reports);
    add_shard_option(cmd, o.shard,
                     "run only shard I of N (1-based, e.g. 2/4) of the planned case x kernels, balanced by expected time; merge the "
                     "shards with `attngate merge`");
    add_progress_option(cmd, console);
    return {cmd, [a, &console] {
                return run_kernels_supervised(!a->options.isolation, "what it wrote before stays, results.json with \"complete\": false",
                                              [&] { return run(*a, console); });
            }};
}

}  // namespace attngate::cli
