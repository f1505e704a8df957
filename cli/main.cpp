// attngate's command line: parse, call the library, choose the exit code. The only place
// that prints errors and exits.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backend/memory.hpp"
#include "baseline_cmd.hpp"
#include "bench_cmd.hpp"
#include "common.hpp"
#include "conform_cmd.hpp"
#include "fleet_cmds.hpp"
#include "perf_cmds.hpp"
#include "suite_cmd.hpp"
#include "io/files.hpp"
#include "io/process.hpp"
#include "results/fingerprint.hpp"
#include "run/golden_generate.hpp"
#include "store/golden.hpp"
#include "plan/inputs.hpp"
#include "plan/shard.hpp"
#include "report/console.hpp"
#include "report/escape.hpp"
#include "report/report_files.hpp"
#include "run/run.hpp"
#include "plan/suite.hpp"

namespace fs = std::filesystem;
using namespace attngate;
using attngate::cli::KernelSources;
using attngate::cli::open_backends;
using attngate::cli::report_error;
using attngate::cli::resolve_suite;

namespace {

struct RunArgs {
    std::string suite;
    cli::StoreArgs store;
    std::string out = "reports/results.json";
    std::vector<std::string> checks = {"golden", "memory", "perf", "cost"};
    std::string machine, device_class = "gcp-e2-standard-2";
    KernelSources sources;
    std::vector<std::string> kernels, cases;
    bool no_isolation = false, strict = false, no_calibration = false;
    std::string perf_metric = "time";
    std::optional<double> timeout_s;
    std::vector<std::string> lockfiles, history;
    std::string workload_kernel;
    ReportPaths reports;
    std::string shard;
    cli::TrendArgs trends;
};

/// Prints each case's line, or on a terminal a single updating progress line (failures
/// still get their own line).
ProgressFn console_progress_printer() {
    const bool tty = isatty(STDOUT_FILENO) != 0;
    const auto start = std::chrono::steady_clock::now();
    return [tty, start, header = false](const CaseResult &r, size_t done, size_t total) mutable {
        if (!header) fmt::print("{}", console_header()), header = true;
        if (!tty) fmt::print("{}", console_line(r, done, total));
        else {
            if (is_failing(r.verdict())) fmt::print("\r\x1b[K{}", console_line(r, done, total));
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print("{}{}", console_progress(r, done, total, elapsed), done == total ? "\r\x1b[K" : "");
        }
        std::fflush(stdout);
    };
}

int cmd_run(RunArgs a) {
    const std::string shown_out = a.out;
    // Every output path is fixed before the first kernel: one in this process may chdir().
    for (std::string *p : {&a.out, &a.reports.html, &a.reports.markdown, &a.reports.junit, &a.reports.gbench}) *p = absolute_path(*p);
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    RunOptions opt;
    auto backends = open_backends(a.sources, &opt.extra_origins);
    if (!backends) return report_error(backends.error());
    auto store = cli::open_store(a.store);
    if (!store) return report_error(store.error());
    opt.store = store->get();
    opt.results_path = a.out;
    opt.checks = a.checks;
    opt.filter = {a.kernels, a.cases};
    opt.isolation = !a.no_isolation;
    opt.timeout_s = a.timeout_s;
    opt.machine = a.machine;
    opt.device_class = a.device_class;
    opt.lockfiles = a.lockfiles;
    opt.strict = a.strict;
    opt.workload_kernel = a.workload_kernel;
    opt.calibrate = !a.no_calibration;
    opt.count_instructions = a.perf_metric == "instructions";
    opt.plugins = a.sources.plugins;
    if (!a.shard.empty()) {
        auto shard = parse_shard(a.shard);
        if (!shard) return report_error(shard.error());
        opt.shard = *shard;
    }
    ReportContext ctx;
    if (auto h = load_history(a.history, suite->name); h) ctx.history = std::move(*h);
    else return report_error(h.error());
    auto results = run_suite(*suite, *backends, opt, console_progress_printer());
    if (!results) return report_error(results.error());
    // The results are written before the history is touched: a store failure loses nothing.
    if (auto t = cli::record_and_analyze(*results, **store, a.trends, ctx); !t) {
        fmt::print("{}", console_summary(*results, shown_out));
        return report_error(t.error());
    }
    if (auto w = write_reports(*results, ctx, a.reports); !w) return report_error(w.error());
    fmt::print("{}", console_summary(*results, shown_out));
    return cli::with_load_errors(*backends, results->verdict() == Verdict::Fail ? kExitDrift : kExitPass);
}

int cmd_baseline_update(const cli::BaselineUpdateArgs &a) {
    auto results = load_results(a.results_path);
    if (!results) return report_error(results.error());
    if (!results->complete)
        return report_error(Error{ErrorKind::BadInput, fmt::format("{}: $.complete: the run did not finish; rerun it first", a.results_path)});
    return cli::baseline_update(a, *results);
}

int cmd_golden_generate(const std::string &suite_arg, const cli::StoreArgs &store_args, const std::vector<std::string> &lockfiles) {
    auto suite = resolve_suite(suite_arg);
    if (!suite) return report_error(suite.error());
    auto store = cli::open_store(store_args);
    if (!store) return report_error(store.error());
    auto backends = open_backends({});
    if (!backends) return report_error(backends.error());
    auto fp = collect_fingerprint(backends->kernels(), backends->fingerprint(), lockfiles);
    if (!fp) return report_error(fp.error());
    auto m = generate_goldens(*suite, **store, [](const GoldenEntry &e) {
        fmt::print("golden {:<28} max|out| {:.3g}  straightforward err {:.3g}  {}\n", e.case_id, e.output_max_abs,
                   e.straightforward_max_abs_error, e.file);
    });
    if (!m) return report_error(m.error());
    if (auto w = save_golden_fingerprint(*suite, **store, *fp); !w) return report_error(w.error());
    fmt::print("wrote {} goldens and manifest.json to {}\n", m->cases.size(), (*store)->where("goldens/" + suite->name));
    return kExitPass;
}

int cmd_inputs(const std::string &suite_arg, const std::string &case_id, const std::string &out) {
    auto suite = resolve_suite(suite_arg);
    if (!suite) return report_error(suite.error());
    const CaseSpec *c = suite->find_case(case_id);
    if (!c) return report_error(Error{ErrorKind::Usage, fmt::format("--case {}: not a case of {}", case_id, suite->file.string())});
    if (auto w = write_case_inputs(*suite, *c, out); !w) return report_error(w.error());
    fmt::print("wrote the inputs of {}/{} to {}\n", suite->name, case_id, out);
    return kExitPass;
}

int cmd_kernels(const KernelSources &sources) {
    auto backends = open_backends(sources);
    if (!backends) return report_error(backends.error());
    for (const auto *k : backends->kernels())
        fmt::print("{:<14} {:<10} {}\n{:<14} from {}; supports: {}\n", terminal_text(k->name), terminal_text(k->version),
                   terminal_text(k->description), "", terminal_text(k->origin), feature_names(k->features));
    return cli::with_load_errors(*backends, kExitPass);
}

struct ReportArgs {
    std::string results;
    std::vector<std::string> history;
    ReportPaths reports;
    bool exit_code = false;
    cli::StoreArgs store;
    cli::TrendArgs trends;
};

int cmd_report(const ReportArgs &a) {
    if (!a.reports.any()) return report_error(Error{ErrorKind::Usage, "report: nothing to write (give --html, --markdown, --junit or --gbench)"});
    auto results = load_results(a.results);
    if (!results) return report_error(results.error());
    ReportContext ctx;
    if (auto h = load_history(a.history, results->suite); h) ctx.history = std::move(*h);
    else return report_error(h.error());
    auto store = cli::open_store(a.store);
    if (!store) return report_error(store.error());
    if (auto t = cli::record_and_analyze(*results, **store, a.trends, ctx); !t) return report_error(t.error());
    if (auto w = write_reports(*results, ctx, a.reports); !w) return report_error(w.error());
    return a.exit_code && results->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

struct EnvArgs {
    std::vector<std::string> lockfiles, diff;
    KernelSources sources;
    bool json = false;
};

int cmd_env(const EnvArgs &a) {
    if (!a.diff.empty()) {
        auto before = load_fingerprint(a.diff[0]);
        if (!before) return report_error(before.error());
        auto after = load_fingerprint(a.diff[1]);
        if (!after) return report_error(after.error());
        fmt::print("{} -> {}\n{}", terminal_text(a.diff[0]), terminal_text(a.diff[1]), console_fingerprint_diff(diff_fingerprints(*before, *after)));
        return kExitPass;
    }
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    auto fp = collect_fingerprint(backends->kernels(), backends->fingerprint(), a.lockfiles);
    if (!fp) return report_error(fp.error());
    fmt::print("{}", a.json ? pretty_json(*fp) : console_fingerprint(*fp));
    return kExitPass;
}

/// The report-file options shared by `run` and `report`.
void add_report_options(CLI::App *cmd, ReportPaths &paths, std::vector<std::string> &history) {
    cmd->add_option("--html", paths.html, "write the self-contained HTML report here");
    cmd->add_option("--markdown", paths.markdown, "write the Markdown summary (PR comment, $GITHUB_STEP_SUMMARY) here");
    cmd->add_option("--junit", paths.junit, "write JUnit XML here");
    cmd->add_option("--gbench", paths.gbench, "write the timing samples as Google Benchmark JSON here (for its compare.py)");
    cmd->add_option("--history", history, "earlier results.json files or directories, for trend charts (repeatable)");
}

}  // namespace

int main(int argc, char **argv) {
    exec_with_exact_heap_accounting(argv);
    start_directory();  // read now, before any kernel could chdir(): children start there
    CLI::App app{"attngate: the regression gate for attention kernels (golden outputs, memory, throughput, cost)"};
    app.require_subcommand(1);
    app.set_version_flag("--version", tool_version());

    RunArgs run;
    auto *run_cmd = app.add_subcommand("run", "run a suite's cases on its kernels and gate them against baselines");
    run_cmd->add_option("--suite", run.suite, "suite file or name in suites/")->required();
    cli::add_store_options(run_cmd, run.store);
    run_cmd->add_option("--out", run.out, "where results.json goes")->capture_default_str();
    run_cmd->add_option("--checks", run.checks, "checks to run: golden, memory, perf, cost (comma-separated)")->delimiter(',')->capture_default_str();
    run_cmd->add_option("--machine", run.machine, "a name for this machine class (perf baselines are kept per class)");
    run_cmd->add_option("--device-class", run.device_class, "the pricing.json entry this machine's time is priced as")->capture_default_str();
    run_cmd->add_flag("--no-isolation", run.no_isolation, "run kernels in this process (for debugging; a crash ends the run with exit 1)");
    run_cmd->add_option("--timeout", run.timeout_s, "seconds per case x kernel before an isolated kernel counts as hung")
        ->check(cli::finite_number(0, 86400));
    cli::add_kernel_source_options(run_cmd, run.sources);
    run_cmd->add_option("--kernel", run.kernels, "only these kernels (label or name, repeatable; any loaded kernel)");
    run_cmd->add_option("--case", run.cases, "only these cases (repeatable)");
    run_cmd->add_option("--lockfile", run.lockfiles, "a lock file of yours to record in the fingerprint (repeatable)");
    run_cmd->add_flag("--strict", run.strict,
                      "dedicated runners: a timed case the perf rule cannot gate (too noisy, no baseline) fails instead of skipping");
    run_cmd->add_flag("--no-calibration", run.no_calibration,
                      "gate absolute times instead of times relative to the calibration workload timed with the cases (still timed: "
                      "a verdict that the machine's change of speed could explain is not gated either way)");
    run_cmd->add_option("--perf-metric", run.perf_metric,
                        "time, or instructions: one call's instructions counted under valgrind's callgrind, gated with the plain "
                        "threshold (check \"instructions\", baselines kept per machine class)")
        ->check(CLI::IsMember({"time", "instructions"}))
        ->capture_default_str();
    run_cmd->add_option("--workload-kernel", run.workload_kernel,
                        "the kernel (suite label or plugin kernel) every workload's cost projection uses, instead of the workload's own");
    add_report_options(run_cmd, run.reports, run.history);
    run_cmd->add_option("--shard", run.shard, "run only shard I of N (1-based, e.g. 2/4) of the planned case x kernels, balanced by expected time; merge the shards with `attngate merge`");
    cli::add_trend_options(run_cmd, run.trends);

    std::string suite_arg, case_id, out_dir;
    cli::StoreArgs golden_store;
    auto *golden = app.add_subcommand("golden", "goldens: the fp64 reference outputs");
    golden->require_subcommand(1);
    auto *generate = golden->add_subcommand("generate", "compute every case's golden with the reference kernel");
    generate->add_option("--suite", suite_arg, "suite file or name in suites/")->required();
    cli::add_store_options(generate, golden_store);
    std::vector<std::string> golden_lockfiles;
    generate->add_option("--lockfile", golden_lockfiles, "a lock file of yours to record in the baseline's fingerprint (repeatable)");

    auto *inputs = app.add_subcommand("inputs", "write one case's inputs as .npy plus case.json");
    inputs->add_option("--suite", suite_arg, "suite file or name in suites/")->required();
    inputs->add_option("--case", case_id, "case id")->required();
    inputs->add_option("--out", out_dir, "output directory")->required();

    cli::BaselineUpdateArgs bu;
    auto *baseline = app.add_subcommand("baseline", "review and accept baselines on your own machine");
    baseline->require_subcommand(1);
    auto *update = baseline->add_subcommand("update", "show old -> new per case and write the accepted baselines");
    update->add_option("--results", bu.results_path, "results.json of the run to accept")->capture_default_str();
    cli::add_store_options(update, bu.store);
    update->add_option("--checks", bu.checks, "which baselines (memory); default: all in the results")->delimiter(',');
    update->add_option("--only", bu.only, "only case/kernel labels matching this glob");
    update->add_option("--reason", bu.reason, "why, stored with the provenance");
    update->add_option("--machine", bu.machine, "a name for this machine class");
    update->add_flag("--yes", bu.yes, "accept every row without asking");
    update->add_flag("--force", bu.force, "accept rows whose golden check failed");
    update->add_flag("--allow-in-ci", bu.allow_in_ci, "write even when CI=true");

    KernelSources kernel_sources;
    auto *kernels = app.add_subcommand("kernels", "list kernels and what they support");
    cli::add_kernel_source_options(kernels, kernel_sources);

    ReportArgs report;
    auto *report_cmd = app.add_subcommand("report", "write HTML, Markdown and JUnit reports from a results.json");
    report_cmd->add_option("results", report.results, "results.json of a run")->required();
    add_report_options(report_cmd, report.reports, report.history);
    report_cmd->add_flag("--exit-code", report.exit_code, "exit 1 when the results' verdict is fail");
    cli::add_store_options(report_cmd, report.store);
    cli::add_trend_options(report_cmd, report.trends);

    EnvArgs env;
    auto *env_cmd = app.add_subcommand("env", "print the dependency and environment fingerprint, or diff two");
    env_cmd->add_option("--lockfile", env.lockfiles, "a lock file of yours to include (repeatable)");
    cli::add_kernel_source_options(env_cmd, env.sources);
    env_cmd->add_flag("--json", env.json, "print JSON");
    env_cmd->add_option("--diff", env.diff, "A.json B.json: what moved from A to B (results or fingerprint files)")->expected(2);

    const auto perf_command = cli::add_perf_commands(app);
    const auto bench_command = cli::add_bench_command(app);
    const auto suite_command = cli::add_suite_commands(app);
    const auto fleet_command = cli::add_fleet_commands(app);
    const auto conform_command = cli::add_conform_command(app);

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
    const auto dispatch = [&]() -> int {
        if (*run_cmd)
            return cli::run_kernels_supervised(run.no_isolation, "what it wrote before stays, results.json with \"complete\": false",
                                               [&] { return cmd_run(run); });
        if (*generate) return cmd_golden_generate(suite_arg, golden_store, golden_lockfiles);
        if (*inputs) return cmd_inputs(suite_arg, case_id, out_dir);
        if (*kernels) return cmd_kernels(kernel_sources);
        if (*update) return cmd_baseline_update(bu);
        if (const int rc = perf_command(); rc >= 0) return rc;
        if (const int rc = bench_command(); rc >= 0) return rc;
        if (const int rc = suite_command(); rc >= 0) return rc;
        if (const int rc = fleet_command(); rc >= 0) return rc;
        if (const int rc = conform_command(); rc >= 0) return rc;
        if (*report_cmd) return cmd_report(report);
        if (*env_cmd) return cmd_env(env);
        return kExitBadInput;
    };
    // std::filesystem is a library boundary like Boost.JSON: a path it cannot stat (a symlink
    // loop, an over-long name) that slipped past an error_code overload is bad input, not abort().
    try {
        return dispatch();
    } catch (const std::filesystem::filesystem_error &e) {
        return report_error(Error{ErrorKind::BadInput, fmt::format("{}: {}", e.path1().string(), e.code().message())});
    }
}
