// `attngate ab`: paired A/B of two attngate builds (or two adapters) on the same machine.
#include <ctime>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/json_io.hpp"
#include "perf_table.hpp"
#include "report_options.hpp"
#include "run/ab.hpp"
#include "run/run.hpp"
#include "run/sharding.hpp"
#include "store/baseline_update.hpp"

namespace attngate::cli {

namespace {

struct AbArgs {
    std::string suite, a, b, a_adapter, b_adapter, out = "reports/ab.json";
    std::vector<std::string> plugins;
    PlanFilter filter;
    StoreArgs store;
    AbOptions options;  ///< bound to the options directly; the CLI fills in the rest
    std::optional<ShardSpec> shard;
    ReportPaths reports;
};

/// One side of `ab`: an adapter kept up for the whole run, or an attngate build.
Result<std::unique_ptr<AbSide>> make_side(const char *which, const std::string &build, const std::string &adapter, const Suite &suite,
                                          const AbArgs &a) {
    if (!adapter.empty()) {
        // Only the adapter's kernels: the built-ins are the same on both sides.
        auto backends = open_backends(KernelSources{{}, {adapter}, {}, false});
        if (!backends) return std::unexpected(backends.error());
        return backend_side(fmt::format("{}: {}", which, adapter), std::make_unique<Backends>(std::move(*backends)), suite, a.filter);
    }
    if (build.empty()) return fail(ErrorKind::Usage, "ab: side {} needs --{} (a build) or --{}-adapter (an adapter command)", which, which, which);
    std::vector<std::string> time_args = {"--suite", suite.file.string()}, env_args;
    for (const auto &p : a.plugins) time_args.insert(time_args.end(), {"--plugin", p}), env_args.insert(env_args.end(), {"--plugin", p});
    for (const auto &k : a.filter.kernels) time_args.insert(time_args.end(), {"--kernel", k});
    for (const auto &c : a.filter.cases) time_args.insert(time_args.end(), {"--case", c});
    return build_side(build, std::move(time_args), std::move(env_args));
}

/// For `ab --shard I/N`: this shard's cases (whole cases, so both builds' `time` take them
/// as --case) and the shard's description for the results.
Result<std::pair<std::vector<std::string>, json::object>> ab_shard(const Suite &suite, const AbArgs &a, Store &store) {
    auto backends = open_backends(KernelSources{a.plugins, {}, {}, true});
    if (!backends) return std::unexpected(backends.error());
    auto plan = make_plan(suite, backends->kernels(), a.plugins, a.filter);
    if (!plan) return std::unexpected(plan.error());
    auto shard = shard_plan(*plan, suite, *a.shard, ShardUnit::Case, store, machine_class(""), {CheckName::Perf}, a.options.policy.alpha);
    if (!shard) return std::unexpected(shard.error());
    std::vector<std::string> cases;
    for (const auto &pc : plan->cases) cases.push_back(pc.spec->id);
    return std::pair(std::move(cases), std::move(*shard));
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

/// Each perf check of the A/B results as a printed row.
std::vector<PerfRow> perf_rows(const RunResults &results) {
    std::vector<PerfRow> rows;
    for (const auto &r : results.results)
        for (const auto &c : r.checks) {
            const PerfMetrics *m = c.get<PerfMetrics>();
            if (!m) continue;
            rows.push_back({r.case_id, r.kernel, m->status ? enum_name(*m->status) : "?", c.reason, m->ratio.value_or(NAN),
                            m->ci_low.value_or(NAN), m->ci_high.value_or(NAN), m->p_adjusted.value_or(NAN)});
        }
    return rows;
}

/// The closing line: a regression, or how many cases could not be gated.
std::string headline(const std::vector<PerfRow> &rows, bool strict) {
    size_t regressions = 0, ungated = 0;
    for (const auto &row : rows) regressions += row.status == "regression", ungated += row.status == "too_noisy";
    std::string said = regressions ? fmt::format("REGRESSION in {} case(s)", regressions) : "no regression";
    if (ungated) said += fmt::format("{} {} case(s) too noisy to gate{}", regressions ? ";" : ", but", ungated, strict ? " (strict: failed)" : "");
    return said;
}

/// The results of a shard with no case to time: complete, and empty.
int empty_shard(const Suite &suite, json::object shard, const AbArgs &a, const Console &console) {
    RunResults empty;
    empty.tool_version = tool_version();
    empty.suite = suite.name;
    empty.suite_file = suite.file.string();
    empty.complete = true;
    empty.shard = std::move(shard);
    if (auto w = save_results(empty, a.out); !w) return report_error(w.error());
    console.say("shard {}/{}: no case to time; results in {}\n", a.shard->index, a.shard->count, a.out);
    return kExitPass;
}

/// Runs the rounds with their progress on stderr.
Result<RunResults> timed_rounds(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &o, const Console &console) {
    Progress progress(console, "A/B " + suite.name, "rows timed on both sides");
    return run_ab(suite, a, b, o, [&progress](const AbProgress &p) {
        progress.update(p.done, p.total, fmt::format("round {} of {}", p.round, p.rounds));
    });
}

int ab(AbArgs a, const Console &console) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    auto store = open_store(a.store);
    if (!store) return report_error(store.error());
    json::object shard;
    if (a.shard) {
        auto mine = ab_shard(*suite, a, **store);
        if (!mine) return report_error(mine.error());
        if (mine->first.empty()) return empty_shard(*suite, std::move(mine->second), a, console);  // more shards than cases
        shard = std::move(mine->second);
        a.filter.cases = std::move(mine->first);
    }
    AbOptions &o = a.options;
    o.store = store->get();
    o.compile_threshold_pct = suite->perf.compile_threshold_pct;
    o.profiles_dir = std::filesystem::absolute(a.out).parent_path() / "profiles";
    o.strict = o.strict || suite->perf.require_verdict;
    auto side_a = make_side("a", a.a, a.a_adapter, *suite, a);
    if (!side_a) return report_error(side_a.error());
    auto side_b = make_side("b", a.b, a.b_adapter, *suite, a);
    if (!side_b) return report_error(side_b.error());
    const std::time_t started = std::time(nullptr);
    auto results = timed_rounds(*suite, **side_a, **side_b, o, console);
    if (!results) return report_error(results.error());
    results->shard = std::move(shard);
    if (results->started_at.empty()) {  // merge and the history order runs by it
        char when[32];
        std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
        results->started_at = when;
    }
    const std::vector<PerfRow> rows = perf_rows(*results);
    if (!rows.empty()) console.say("{}", perf_table(rows));
    console.say("{}", numerics_table(results->results));
    if (auto w = save_results(*results, a.out); !w) return report_error(w.error());
    if (auto w = write_reports(*results, ReportContext{}, a.reports); !w) return report_error(w.error());
    console.say("\n{}: B ({}) against A ({}), {}; results in {}\n", headline(rows, o.strict), (*side_b)->describe(), (*side_a)->describe(),
                rounds_said(*results), a.out);
    return results->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

void add_side_options(CLI::App *cmd, AbArgs &a) {
    cmd->add_option("--a", a.a, "build A: an attngate binary, a build directory, or a command line (no shell; quote words with spaces)");
    cmd->add_option("--b", a.b, "build B, likewise");
    cmd->add_option("--a-adapter", a.a_adapter, "side A is this adapter command (kept up for the whole run), e.g. an older jax venv");
    cmd->add_option("--b-adapter", a.b_adapter, "side B is this adapter command");
}

void add_round_options(CLI::App *cmd, AbOptions &o) {
    cmd->add_option("--rounds", o.rounds, "paired rounds over every case x kernel (each times it once per side)")
        ->check(CLI::Range(2, 100000))
        ->capture_default_str();
    cmd->add_option("--max-rounds", o.max_rounds,
                    "sequential rounds: a case x kernel still undecided after --rounds (too noisy, or a CI that still reaches the "
                    "threshold with a median ratio past half of it) gets 10 more rounds at a time, up to this many, each look judged "
                    "at Bonferroni's share of alpha; 0 or at most --rounds: fixed rounds (the default is sequential: 13 rounds, up to 61)")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();
    cmd->add_option("--min-time", o.round.min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    cmd->add_flag("--bitwise", o.bitwise, "fail any case x kernel whose output bits differ between the sides");
    cmd->add_flag("--strict", o.strict, "dedicated runners: a case too noisy to gate fails instead of skipping");
    add_policy_options(cmd, o.policy);
}

}  // namespace

Command add_ab_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<AbArgs>();
    auto *cmd = app.add_subcommand("ab", "paired A/B: time two attngate builds interleaved on the same machine");
    add_side_options(cmd, *a);
    add_store_options(cmd, a->store);
    add_suite_option(cmd, a->suite);
    add_round_options(cmd, a->options);
    cmd->add_option("--plugin", a->plugins, "kernel plugin .so both sides load (repeatable)");
    add_filter_options(cmd, a->filter);
    add_out_option(cmd, a->out, "where the A/B results.json goes")->capture_default_str();
    add_shard_option(cmd, a->shard,
                     "time only shard I of N (1-based) of the suite's cases, balanced by expected time; merge with `attngate merge`");
    add_report_format_options(cmd, a->reports);
    add_progress_option(cmd, console);
    return {cmd, [a, &console] { return ab(*a, console); }};
}

}  // namespace attngate::cli
