// time, compare and ab.
#include "perf_cmds.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "checks/numerics_check.hpp"
#include "run/ab.hpp"
#include "run/ab_sides.hpp"
#include "common.hpp"
#include "results/compare.hpp"
#include "io/files.hpp"
#include "run/plan_timer.hpp"
#include "report/report_files.hpp"
#include "run/run.hpp"
#include "run/sharding.hpp"
#include "run/time_server.hpp"
#include "store/baseline_update.hpp"

namespace attngate::cli {

namespace {

struct PerfArgs {
    // time
    std::string suite, out;
    KernelSources sources;
    std::vector<std::string> kernels, cases;
    int repetitions = 1;
    double min_time_s = 0.02;
    bool no_isolation = false, serve = false;
    std::string metric = "time";
    // compare
    std::string a_file, b_file;
    // ab
    std::string a, b, a_adapter, b_adapter, ab_out = "reports/ab.json", outputs;
    StoreArgs store;
    bool bitwise = false;
    int rounds = 13, max_rounds = 61;
    double threshold_pct = 5.0, alpha = 0.01;
    bool strict = false;
    ReportPaths reports;
    std::string shard;
};

int cmd_time(PerfArgs a) {
    for (std::string *p : {&a.out, &a.outputs}) *p = absolute_path(*p);  // before a kernel in this process could chdir()
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    std::vector<std::string> origins;
    auto backends = open_backends(a.sources, &origins);
    if (!backends) return report_error(backends.error());
    auto plan = make_plan(*suite, backends->kernels(), origins, {a.kernels, a.cases});
    if (!plan) return report_error(plan.error());
    if (a.serve && (!a.out.empty() || !a.outputs.empty() || a.metric != "time"))
        return report_error(Error{ErrorKind::Usage, "time --serve: answers timing requests only (no --out, --outputs or --metric)"});
    if (a.serve) {
        // The server is the harness's child already: it times in its own process, and what
        // a kernel prints goes to stderr, never into the answers.
        const int reply_fd = ::dup(STDOUT_FILENO);
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
        PlanTimer timer(*suite, *plan, *backends);
        auto served = serve_timing(timer, TimingRequest{1, a.min_time_s, false, 3600}, stdin, reply_fd);
        return served ? 0 : report_error(served.error());
    }
    if (a.out.empty()) return report_error(Error{ErrorKind::Usage, "time: --out is required (unless --serve)"});
    if (!a.outputs.empty())
        if (auto w = write_plan_outputs(*suite, *plan, *backends, a.outputs, !a.no_isolation); !w) return report_error(w.error());
    TimingRequest request{a.repetitions, a.min_time_s, !a.no_isolation, 3600};
    request.count_instructions = a.metric == "instructions";
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
    return 0;
}

/// One printed row: a case x kernel's decision, from a PerfDecision or a perf check's metrics.
struct Row {
    std::string label, status, reason;
    double ratio, ci_low, ci_high, p_adjusted;
};

void print_rows(const std::vector<Row> &rows) {
    fmt::print("{:<48} {:>8} {:>17} {:>9} {:<12} {}\n", "case/kernel", "ratio", "CI", "p (adj)", "status", "reason");
    for (const auto &r : rows)
        fmt::print("{:<48} {:>8.3f} {:>8.3f}-{:<8.3f} {:>9.2g} {:<12} {}\n", r.label, r.ratio, r.ci_low, r.ci_high, r.p_adjusted,
                   r.status, r.reason);
}

/// "21 paired rounds", or "21 to 61 paired rounds (12 of 52 case x kernels took more)":
/// the pairs each perf check was judged on, as run_ab's sequential rounds gave them.
std::string rounds_said(const RunResults &results) {
    std::vector<double> pairs;
    for (const auto &r : results.results)
        for (const auto &c : r.checks)
            if (const auto n = figure_of<&PerfMetrics::repetitions>(c)) pairs.push_back(*n);
    if (pairs.empty()) return "no paired rounds";
    const auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end());
    if (*lo == *hi) return fmt::format("{:g} paired rounds", *lo);
    const auto more = std::count_if(pairs.begin(), pairs.end(), [&](double n) { return n > *lo; });
    return fmt::format("{:g} to {:g} paired rounds ({} of {} case x kernels took more)", *lo, *hi, more, pairs.size());
}

/// The numerics and golden table of an A/B or compare run: what moved, per case x kernel.
void print_numerics(const RunResults &results) {
    bool header = false;
    for (const auto &r : results.results)
        for (const auto &c : r.checks) {
            if (c.check() != CheckName::Numerics && !(c.check() == CheckName::Golden && c.verdict == Verdict::Fail)) continue;
            if (!header) fmt::print("\n{:<48} {:<9} {:<6} {}\n", "case/kernel", "check", "verdict", "what moved"), header = true;
            fmt::print("{:<48} {:<9} {:<6} {}\n", r.case_id + "/" + r.kernel, c.name(), verdict_name(c.verdict), c.reason);
            for (const auto &n : c.notes) fmt::print("{:<48} {:<9} {:<6} note: {}\n", "", "", "", n);
        }
}

int cmd_compare(const PerfArgs &a) {
    auto ra = load_results(a.a_file);
    if (!ra) return report_error(ra.error());
    auto rb = load_results(a.b_file);
    if (!rb) return report_error(rb.error());
    DecisionPolicy policy;
    policy.alpha = a.alpha;
    policy.threshold = a.threshold_pct / 100.0;
    auto report = compare_results(*ra, *rb, policy);
    if (!report) return report_error(Error{report.error().kind, fmt::format("{} vs {}: {}", a.a_file, a.b_file, report.error().message)});
    std::vector<Row> rows;
    for (const auto &r : report->rows)
        rows.push_back({r.case_id + "/" + r.kernel, perf_status_name(r.decision.status), r.decision.reason, r.decision.ratio,
                        r.decision.ci_low, r.decision.ci_high, r.decision.p_adjusted});
    RunResults numerics;
    numerics.results = compare_numerics(*ra, *rb);
    if (rows.empty() && numerics.results.empty())
        return report_error(Error{ErrorKind::BadInput, fmt::format("{} and {} share no timed or checked case x kernel", a.a_file, a.b_file)});
    if (!rows.empty()) print_rows(rows);
    print_numerics(numerics);
    fmt::print("\n{}: B ({}) against A ({})\n", report->regression() ? "REGRESSION" : "no regression", a.b_file, a.a_file);
    return report->regression() ? 1 : 0;
}

/// One side of `ab`: an adapter kept up for the whole run, or an attngate build.
Result<std::unique_ptr<AbSide>> make_side(const char *which, const std::string &build, const std::string &adapter, const Suite &suite,
                                          const PerfArgs &a) {
    if (!adapter.empty()) {
        // Only the adapter's kernels: the built-ins are the same on both sides.
        auto backends = open_backends(KernelSources{{}, {adapter}, {}, false});
        if (!backends) return std::unexpected(backends.error());
        return backend_side(fmt::format("{}: {}", which, adapter), std::make_unique<Backends>(std::move(*backends)), suite,
                            {a.kernels, a.cases});
    }
    if (build.empty()) return fail(ErrorKind::Usage, "ab: side {} needs --{} (a build) or --{}-adapter (an adapter command)", which, which, which);
    std::vector<std::string> time_args = {"--suite", suite.file.string()};
    for (const auto &p : a.sources.plugins) time_args.insert(time_args.end(), {"--plugin", p});
    for (const auto &k : a.kernels) time_args.insert(time_args.end(), {"--kernel", k});
    for (const auto &c : a.cases) time_args.insert(time_args.end(), {"--case", c});
    return build_side(build, std::move(time_args));
}

/// For `ab --shard I/N`: this shard's cases (whole cases, so both builds' `time` take them
/// as --case) and the shard's description for the results.
Result<std::pair<std::vector<std::string>, json::object>> ab_shard(const Suite &suite, const PerfArgs &a, Store &store) {
    auto spec = parse_shard(a.shard);
    if (!spec) return std::unexpected(spec.error());
    auto backends = open_backends(KernelSources{a.sources.plugins, {}, {}, true});
    if (!backends) return std::unexpected(backends.error());
    auto plan = make_plan(suite, backends->kernels(), a.sources.plugins, {a.kernels, a.cases});
    if (!plan) return std::unexpected(plan.error());
    auto shard = shard_plan(*plan, suite, *spec, ShardUnit::Case, store, machine_class(""), {CheckName::Perf}, a.alpha);
    if (!shard) return std::unexpected(shard.error());
    std::vector<std::string> cases;
    for (const auto &pc : plan->cases) cases.push_back(pc.spec->id);
    return std::pair(std::move(cases), std::move(*shard));
}

int cmd_ab(const PerfArgs &args) {
    auto suite = resolve_suite(args.suite);
    if (!suite) return report_error(suite.error());
    PerfArgs a = args;
    json::object shard;
    if (!a.shard.empty()) {
        auto store = open_store(a.store);
        if (!store) return report_error(store.error());
        auto mine = ab_shard(*suite, a, **store);
        if (!mine) return report_error(mine.error());
        shard = std::move(mine->second);
        if (mine->first.empty()) {  // more shards than cases: this one has nothing to time
            RunResults empty;
            empty.tool_version = tool_version();
            empty.suite = suite->name;
            empty.suite_file = suite->file.string();
            empty.complete = true;
            empty.shard = std::move(shard);
            if (auto w = save_results(empty, a.ab_out); !w) return report_error(w.error());
            fmt::print("shard {}: no case to time; results in {}\n", a.shard, a.ab_out);
            return 0;
        }
        a.cases = std::move(mine->first);
    }
    AbOptions o;
    o.rounds = a.rounds;
    o.max_rounds = a.max_rounds;
    o.round.min_time_s = a.min_time_s;
    o.policy.alpha = a.alpha;
    o.policy.threshold = a.threshold_pct / 100.0;
    auto store = open_store(a.store);
    if (!store) return report_error(store.error());
    o.store = store->get();
    o.bitwise = a.bitwise;
    o.compile_threshold_pct = suite->perf.compile_threshold_pct;
    o.profiles_dir = std::filesystem::absolute(a.ab_out).parent_path() / "profiles";
    auto side_a = make_side("a", a.a, a.a_adapter, *suite, a);
    if (!side_a) return report_error(side_a.error());
    auto side_b = make_side("b", a.b, a.b_adapter, *suite, a);
    if (!side_b) return report_error(side_b.error());
    o.strict = a.strict || suite->perf.require_verdict;
    const bool tty = ::isatty(STDERR_FILENO);
    const std::time_t started = std::time(nullptr);
    auto results = run_ab(*suite, **side_a, **side_b, o, [tty](int round, int rounds) {
        if (tty) fmt::print(stderr, "\rA/B round {} of {}", round, rounds);
    });
    if (tty) fmt::print(stderr, "\n");
    if (!results) return report_error(results.error());
    results->shard = std::move(shard);
    if (results->started_at.empty()) {  // merge and the history order runs by it
        char when[32];
        std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
        results->started_at = when;
    }
    std::vector<Row> rows;
    for (const auto &r : results->results)
        for (const auto &c : r.checks) {
            const PerfMetrics *m = c.get<PerfMetrics>();
            if (!m) continue;
            rows.push_back({r.case_id + "/" + r.kernel, m->status ? enum_name(*m->status) : "?", c.reason, m->ratio.value_or(NAN),
                            m->ci_low.value_or(NAN), m->ci_high.value_or(NAN), m->p_adjusted.value_or(NAN)});
        }
    if (!rows.empty()) print_rows(rows);
    print_numerics(*results);
    if (auto w = save_results(*results, a.ab_out); !w) return report_error(w.error());
    if (auto w = write_reports(*results, ReportContext{}, a.reports); !w) return report_error(w.error());
    size_t regressions = 0, ungated = 0;
    for (const auto &row : rows) regressions += row.status == "regression", ungated += row.status == "too_noisy";
    const bool failed = results->verdict() == Verdict::Fail;
    // The headline says what the rows say: a regression, or how many cases could not be gated.
    std::string headline = regressions ? fmt::format("REGRESSION in {} case(s)", regressions) : "no regression";
    if (ungated) headline += fmt::format("{} {} case(s) too noisy to gate{}", regressions ? ";" : ", but", ungated, o.strict ? " (strict: failed)" : "");
    fmt::print("\n{}: B ({}) against A ({}), {}; results in {}\n", headline, (*side_b)->describe(), (*side_a)->describe(),
               rounds_said(*results), a.ab_out);
    return failed ? 1 : 0;
}

}  // namespace

std::function<int()> add_perf_commands(CLI::App &app) {
    auto args = std::make_shared<PerfArgs>();
    auto *time = app.add_subcommand("time", "time a suite's case x kernels and write the samples (what ab runs on each side)");
    time->add_option("--suite", args->suite, "suite file or name in suites/")->required();
    time->add_option("--out", args->out, "where the samples go (JSON); required unless --serve");
    add_kernel_source_options(time, args->sources);
    time->add_option("--kernel", args->kernels, "only these kernels (repeatable)");
    time->add_option("--case", args->cases, "only these cases (repeatable)");
    time->add_option("--repetitions", args->repetitions, "samples per case x kernel")->check(CLI::PositiveNumber)->capture_default_str();
    time->add_option("--min-time", args->min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    time->add_flag("--no-isolation", args->no_isolation, "time in this process");
    time->add_option("--metric", args->metric,
                     "time, or instructions: one call's instructions per case x kernel, on one thread, with this process run under "
                     "valgrind --tool=callgrind (what run --perf-metric instructions spawns)")
        ->check(CLI::IsMember({"time", "instructions"}))
        ->capture_default_str();
    time->add_option("--outputs", args->outputs, "also write each case x kernel's output as .npy here, with index.json (what ab diffs)");
    time->add_flag("--serve", args->serve,
                   "answer timing requests on stdin until it ends, one JSON line each (what ab keeps running per side; "
                   "see harness/run/time_server.hpp)");

    auto *compare = app.add_subcommand("compare", "compare the timings of two results files (B against A) with the perf rule");
    compare->add_option("A", args->a_file, "reference results.json")->required();
    compare->add_option("B", args->b_file, "current results.json")->required();

    auto *ab = app.add_subcommand("ab", "paired A/B: time two attngate builds interleaved on the same machine");
    ab->add_option("--a", args->a, "build A: an attngate binary, a build directory, or a command line (no shell; quote words with spaces)");
    ab->add_option("--b", args->b, "build B, likewise");
    ab->add_option("--a-adapter", args->a_adapter, "side A is this adapter command (kept up for the whole run), e.g. an older jax venv");
    ab->add_option("--b-adapter", args->b_adapter, "side B is this adapter command");
    add_store_options(ab, args->store);
    ab->add_flag("--bitwise", args->bitwise, "fail any case x kernel whose output bits differ between the sides");
    ab->add_option("--suite", args->suite, "suite file or name in suites/")->required();
    ab->add_option("--rounds", args->rounds, "paired rounds over every case x kernel (each times it once per side)")
        ->check(CLI::Range(2, 100000))->capture_default_str();
    ab->add_option("--max-rounds", args->max_rounds,
                   "sequential rounds: a case x kernel still undecided after --rounds (too noisy, or a CI that still reaches the "
                   "threshold with a median ratio past half of it) gets 10 more rounds at a time, up to this many, each look judged at Bonferroni's share of alpha; "
                   "0 or at most --rounds: fixed rounds (the default is sequential: 13 rounds, up to 61)")
        ->check(CLI::Range(0, 100000))->capture_default_str();
    ab->add_option("--min-time", args->min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    ab->add_option("--plugin", args->sources.plugins, "kernel plugin .so both sides load (repeatable)");
    ab->add_option("--kernel", args->kernels, "only these kernels (repeatable)");
    ab->add_option("--case", args->cases, "only these cases (repeatable)");
    ab->add_option("--out", args->ab_out, "where the A/B results.json goes")->capture_default_str();
    ab->add_option("--shard", args->shard, "time only shard I of N (1-based) of the suite's cases, balanced by expected time; merge with `attngate merge`");
    ab->add_option("--html", args->reports.html, "write the HTML report here");
    ab->add_option("--markdown", args->reports.markdown, "write the Markdown summary here");
    ab->add_option("--junit", args->reports.junit, "write JUnit XML here");
    ab->add_flag("--strict", args->strict, "dedicated runners: a case too noisy to gate fails instead of skipping");
    for (auto *cmd : {compare, ab}) {
        cmd->add_option("--threshold-pct", args->threshold_pct, "practical threshold on the time ratio")
            ->check(finite_number(0, 100))->capture_default_str();
        cmd->add_option("--alpha", args->alpha, "significance after Benjamini-Hochberg")->check(finite_number(0, 0.5))->capture_default_str();
    }
    return [=]() -> int {
        if (*time)
            return run_kernels_supervised(args->no_isolation && !args->serve, "--out was not written", [&] { return cmd_time(*args); });
        if (*compare) return cmd_compare(*args);
        if (*ab) return cmd_ab(*args);
        return -1;
    };
}

}  // namespace attngate::cli
