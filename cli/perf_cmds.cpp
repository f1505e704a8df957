// time, compare and ab.
#include "perf_cmds.hpp"

#include <memory>

#include <unistd.h>

#include <fmt/format.h>

#include "run/ab.hpp"
#include "common.hpp"
#include "results/compare.hpp"
#include "io/files.hpp"
#include "run/perf_phase.hpp"
#include "report/report_files.hpp"

namespace attngate::cli {

namespace {

struct PerfArgs {
    // time
    std::string suite, out;
    KernelSources sources;
    std::vector<std::string> kernels, cases;
    int repetitions = 1;
    double min_time_s = 0.02;
    bool no_isolation = false;
    // compare
    std::string a_file, b_file;
    // ab
    std::string a, b, ab_out = "reports/ab.json";
    int rounds = 21;
    double threshold_pct = 5.0, alpha = 0.01;
    bool strict = false;
    ReportPaths reports;
};

int cmd_time(const PerfArgs &a) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    std::vector<std::string> origins;
    auto backends = open_backends(a.sources, &origins);
    if (!backends) return report_error(backends.error());
    auto plan = make_plan(*suite, backends->kernels(), origins, {a.kernels, a.cases});
    if (!plan) return report_error(plan.error());
    auto samples = time_plan(*suite, *plan, *backends, TimingRequest{a.repetitions, a.min_time_s, !a.no_isolation, 3600});
    if (!samples) return report_error(samples.error());
    json::array out;
    for (const auto &s : *samples)
        out.push_back(json::object{{"case", s.case_id}, {"kernel", s.kernel}, {"samples_s", json::array(s.samples_s.begin(), s.samples_s.end())}});
    if (auto w = write_file_atomic(a.out, pretty_json(out)); !w) return report_error(w.error());
    return 0;
}

/// One printed row: a case x kernel's decision, from a PerfDecision or a perf check's metrics.
struct Row {
    std::string label, status, reason;
    double ratio, ci_low, ci_high, p_adjusted;
};

void print_rows(const std::vector<Row> &rows) {
    fmt::print("{:<48} {:>8} {:>17} {:>9} {:<12} {}\n", "case/kernel", "ratio", "95% CI", "p (adj)", "status", "reason");
    for (const auto &r : rows)
        fmt::print("{:<48} {:>8.3f} {:>8.3f}-{:<8.3f} {:>9.2g} {:<12} {}\n", r.label, r.ratio, r.ci_low, r.ci_high, r.p_adjusted,
                   r.status, r.reason);
}

double number_at(const json::object &m, const char *key) {
    const json::value *v = m.if_contains(key);
    return v && v->is_number() ? v->to_number<double>() : NAN;
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
    if (rows.empty()) return report_error(Error{ErrorKind::BadInput, fmt::format("{} and {} share no timed case x kernel", a.a_file, a.b_file)});
    print_rows(rows);
    fmt::print("\n{}: B ({}) against A ({})\n", report->regression() ? "REGRESSION" : "no regression", a.b_file, a.a_file);
    return report->regression() ? 1 : 0;
}

int cmd_ab(const PerfArgs &a) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    AbOptions o;
    o.a = a.a;
    o.b = a.b;
    o.rounds = a.rounds;
    o.min_time_s = a.min_time_s;
    o.policy.alpha = a.alpha;
    o.policy.threshold = a.threshold_pct / 100.0;
    o.strict = a.strict || suite->perf.require_verdict;
    o.time_args = {"--suite", suite->file.string()};
    for (const auto &p : a.sources.plugins) o.time_args.insert(o.time_args.end(), {"--plugin", p});
    for (const auto &k : a.kernels) o.time_args.insert(o.time_args.end(), {"--kernel", k});
    for (const auto &c : a.cases) o.time_args.insert(o.time_args.end(), {"--case", c});
    const bool tty = ::isatty(STDERR_FILENO);
    auto results = run_ab(*suite, o, [tty](int round, int rounds) {
        if (tty) fmt::print(stderr, "\rA/B round {} of {}", round, rounds);
    });
    if (tty) fmt::print(stderr, "\n");
    if (!results) return report_error(results.error());
    std::vector<Row> rows;
    for (const auto &r : results->results) {
        const CheckResult &c = r.checks.at(0);
        const json::value *status = c.metrics.if_contains("status");
        rows.push_back({r.case_id + "/" + r.kernel, status && status->is_string() ? std::string(status->get_string()) : "?", c.reason,
                        number_at(c.metrics, "ratio"), number_at(c.metrics, "ci_low"), number_at(c.metrics, "ci_high"),
                        number_at(c.metrics, "p_adjusted")});
    }
    print_rows(rows);
    if (auto w = save_results(*results, a.ab_out); !w) return report_error(w.error());
    if (auto w = write_reports(*results, ReportContext{}, a.reports); !w) return report_error(w.error());
    size_t regressions = 0, ungated = 0;
    for (const auto &row : rows) regressions += row.status == "regression", ungated += row.status == "too_noisy";
    const bool failed = results->verdict() == Verdict::Fail;
    // The headline says what the rows say: a regression, or how many cases could not be gated.
    std::string headline = regressions ? fmt::format("REGRESSION in {} case(s)", regressions) : "no regression";
    if (ungated) headline += fmt::format("{} {} case(s) too noisy to gate{}", regressions ? ";" : ", but", ungated, o.strict ? " (strict: failed)" : "");
    fmt::print("\n{}: B ({}) against A ({}), {} paired rounds; results in {}\n", headline, o.b, o.a, o.rounds, a.ab_out);
    return failed ? 1 : 0;
}

}  // namespace

std::function<int()> add_perf_commands(CLI::App &app) {
    auto args = std::make_shared<PerfArgs>();
    auto *time = app.add_subcommand("time", "time a suite's case x kernels and write the samples (what ab runs on each side)");
    time->add_option("--suite", args->suite, "suite file or name in suites/")->required();
    time->add_option("--out", args->out, "where the samples go (JSON)")->required();
    add_kernel_source_options(time, args->sources);
    time->add_option("--kernel", args->kernels, "only these kernels (repeatable)");
    time->add_option("--case", args->cases, "only these cases (repeatable)");
    time->add_option("--repetitions", args->repetitions, "samples per case x kernel")->check(CLI::PositiveNumber)->capture_default_str();
    time->add_option("--min-time", args->min_time_s, "minimum seconds per sample")->check(CLI::PositiveNumber)->capture_default_str();
    time->add_flag("--no-isolation", args->no_isolation, "time in this process");

    auto *compare = app.add_subcommand("compare", "compare the timings of two results files (B against A) with the perf rule");
    compare->add_option("A", args->a_file, "reference results.json")->required();
    compare->add_option("B", args->b_file, "current results.json")->required();

    auto *ab = app.add_subcommand("ab", "paired A/B: time two attngate builds interleaved on the same machine");
    ab->add_option("--a", args->a, "build A: an attngate binary, a build directory, or a command line")->required();
    ab->add_option("--b", args->b, "build B, likewise")->required();
    ab->add_option("--suite", args->suite, "suite file or name in suites/")->required();
    ab->add_option("--rounds", args->rounds, "paired rounds (each times every case once per side)")->check(CLI::Range(2, 100000))->capture_default_str();
    ab->add_option("--min-time", args->min_time_s, "minimum seconds per sample")->check(CLI::PositiveNumber)->capture_default_str();
    ab->add_option("--plugin", args->sources.plugins, "kernel plugin .so both sides load (repeatable)");
    ab->add_option("--kernel", args->kernels, "only these kernels (repeatable)");
    ab->add_option("--case", args->cases, "only these cases (repeatable)");
    ab->add_option("--out", args->ab_out, "where the A/B results.json goes")->capture_default_str();
    ab->add_option("--html", args->reports.html, "write the HTML report here");
    ab->add_option("--markdown", args->reports.markdown, "write the Markdown summary here");
    ab->add_option("--junit", args->reports.junit, "write JUnit XML here");
    ab->add_flag("--strict", args->strict, "dedicated runners: a case too noisy to gate fails instead of skipping");
    for (auto *cmd : {compare, ab}) {
        cmd->add_option("--threshold-pct", args->threshold_pct, "practical threshold on the time ratio")->capture_default_str();
        cmd->add_option("--alpha", args->alpha, "significance after Benjamini-Hochberg")->capture_default_str();
    }
    return [=]() -> int {
        if (*time) return cmd_time(*args);
        if (*compare) return cmd_compare(*args);
        if (*ab) return cmd_ab(*args);
        return -1;
    };
}

}  // namespace attngate::cli
