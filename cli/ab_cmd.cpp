// `attngate ab`: paired A/B of two sides on the same machine: two attngate builds, two builds
// of a team's plugin (each in an attngate process of its own), or two adapters.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/in_process_backend.hpp"
#include "command.hpp"
#include "common.hpp"
#include "config_file.hpp"
#include "io/files.hpp"
#include "io/process.hpp"
#include "io/json_io.hpp"
#include "perf_table.hpp"
#include "report/console.hpp"
#include "results/fingerprint.hpp"
#include "report/summary.hpp"
#include "report_options.hpp"
#include "run/ab.hpp"
#include "run/run.hpp"
#include "run/sharding.hpp"
#include "run/unloaded.hpp"
#include "store/baseline_update.hpp"

namespace attngate::cli {

namespace {

/// One side's own settings: a build, and the plugins, adapters and lock files that are its own.
struct SideArgs {
    std::string build;
    std::vector<std::string> plugins, adapters, lockfiles;
};

struct AbArgs {
    std::string suite, out = "reports/ab.json";
    SideArgs a, b;
    std::vector<std::string> plugins;  ///< both sides load these
    PlanFilter filter;
    StoreArgs store;
    AbOptions options;  ///< bound to the options directly; the CLI fills in the rest
    std::optional<ShardSpec> shard;
    ReportPaths reports;
};

/// A side as it will run: resident adapters, or a build (this attngate by default) with its
/// plugins and adapters, and the kernels it times.
struct ResolvedSide {
    const char *which;
    bool resident = false;  ///< adapters alone, kept up in this process
    AbSideSpec spec;
    PlanFilter filter;
};

/// The kernels a plugin provides, from loading it alone.
Result<std::vector<std::string>> kernels_of(const std::string &plugin) {
    auto backend = InProcessBackend::create({plugin});
    if (!backend) return std::unexpected(backend.error());
    std::vector<std::string> names;
    for (const auto &k : (*backend)->kernels())
        if (k.origin != "built-in") names.push_back(k.name);
    return names;
}

/// Resolves one side. A side with plugins of its own times their kernels (unless --kernel
/// says which), not the built-ins both sides share, and its own build of a kernel replaces
/// a --plugin both sides load that provides a kernel of the same name.
Result<ResolvedSide> resolve_side(const char *which, const SideArgs &side, const AbArgs &a) {
    ResolvedSide r{which, false, {side.build, {}, side.adapters, side.lockfiles, ""}, a.filter};
    if (!side.adapters.empty() && side.build.empty() && side.plugins.empty()) {
        r.resident = true;  // the built-ins are the same on both sides: only the adapters' kernels
        return r;
    }
    if (side.build.empty() && side.plugins.empty())
        return fail(ErrorKind::Usage, "ab: side {0} needs --{0} (an attngate build), --{0}-plugin (a build of your plugin) or --{0}-adapter "
                    "(an adapter command)", which);
    if (!side.build.empty())
        if (auto ok = check_build_command(side.build, fmt::format("--{}", which)); !ok) return std::unexpected(ok.error());
    std::vector<std::string> own;
    for (const auto &p : side.plugins) {
        auto names = kernels_of(p);
        if (!names) return std::unexpected(names.error());
        own.insert(own.end(), names->begin(), names->end());
    }
    for (const auto &p : a.plugins) {
        bool replaced = false;
        if (!own.empty()) {
            auto names = kernels_of(p);
            if (!names) return std::unexpected(names.error());
            replaced = std::any_of(names->begin(), names->end(), [&](const std::string &n) { return std::find(own.begin(), own.end(), n) != own.end(); });
        }
        if (!replaced) r.spec.plugins.push_back(p);
    }
    r.spec.plugins.insert(r.spec.plugins.end(), side.plugins.begin(), side.plugins.end());
    if (!side.plugins.empty()) {
        std::string name = side.build.empty() ? "attngate" : side.build;
        for (const auto &p : side.plugins) name += " --plugin " + p;
        r.spec.name = std::move(name);
        if (r.filter.kernels.empty()) r.filter.kernels = std::move(own);
    }
    return r;
}

/// A side's kernel sources did not load (`unloaded`): nothing compared, a failure; the results
/// and reports say so too, so that none of an earlier run's stays to be read as this one's.
int compared_nothing(const Suite &suite, const AbArgs &a, const std::vector<std::string> &unloaded, const Console &console) {
    const RunResults failed = unloaded_results(suite, unloaded);
    if (auto w = save_results(failed, a.out); !w) return report_error(w.error());
    if (auto w = write_reports(failed, ReportContext{}, a.reports); !w) return report_error(w.error());
    for (const auto &e : unloaded) console.say("{}{}\n", kDidNotLoad, terminal_text(e));  // an adapter's words
    console.say("\nFAILED: {} kernel source(s) did not load, so nothing was compared; results in {}\n", unloaded.size(), a.out);
    return kExitDrift;
}

/// One side of `ab`: adapters kept up for the whole run, or an attngate build. Null, with
/// `unloaded` told why, when kernel sources of the side's adapters did not load (a module
/// that no longer imports after a bump): what they serve would be missing from the comparison.
Result<std::unique_ptr<AbSide>> make_side(const ResolvedSide &side, const Suite &suite, std::vector<std::string> &unloaded) {
    if (side.resident) {
        auto backends = open_backends(KernelSources{{}, side.spec.adapters, {}, false});
        if (!backends) return std::unexpected(backends.error());
        for (const auto &e : backends->load_errors()) unloaded.push_back(fmt::format("side {}: {}", side.which, e));
        if (!backends->load_errors().empty()) return nullptr;
        return backend_side(fmt::format("{}: {}", side.which, fmt::join(side.spec.adapters, " + ")),
                            std::make_unique<Backends>(std::move(*backends)), suite, side.filter, side.spec.lockfiles);
    }
    return build_side(side.spec, suite.file, side.filter);
}

/// The sides' attngate processes take every setting from the arguments `ab` gives them (its
/// own attngate.toml is applied to it already): an empty attngate.toml of their own, through
/// $ATTNGATE_CONFIG, keeps them from applying the team's file again, whose adapters would
/// start in every side and whose kernels would replace the ones a side was asked to time.
Result<void> sides_without_config(const TempDir &dir) {
    const auto empty = dir.path / std::string(kConfigName);
    if (auto w = write_file_atomic(empty, ""); !w) return w;
    if (::setenv("ATTNGATE_CONFIG", empty.c_str(), 1) != 0) return fail(ErrorKind::Infra, "setenv ATTNGATE_CONFIG: {}", std::strerror(errno));
    return {};
}

/// For `ab --shard I/N`: this shard's cases (whole cases, so both builds' `time` take them
/// as --case) and the shard's description for the results, planned with side B's plugins.
Result<std::pair<std::vector<std::string>, json::object>> ab_shard(const Suite &suite, const AbArgs &a, const ResolvedSide &b, Store &store) {
    auto backends = open_backends(KernelSources{b.spec.plugins, {}, {}, true});
    if (!backends) return std::unexpected(backends.error());
    auto plan = make_plan(suite, backends->kernels(), b.spec.plugins, b.filter);
    if (!plan) return std::unexpected(plan.error());
    auto shard = shard_plan(*plan, suite, *a.shard, ShardUnit::Case, store, machine_class("", builtin_numerics_path()), {CheckName::Perf}, a.options.policy.alpha);
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
    if (auto out = replaceable_results(a.out); !out) return report_error(out.error());
    if (auto ok = replaceable_reports(a.reports, a.out); !ok) return report_error(ok.error());
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    auto store = open_store(a.store, StoreUse::Read);
    if (!store) return report_error(store.error());
    auto resolved_a = resolve_side("a", a.a, a);
    if (!resolved_a) return report_error(resolved_a.error());
    auto resolved_b = resolve_side("b", a.b, a);
    if (!resolved_b) return report_error(resolved_b.error());
    json::object shard;
    if (a.shard) {
        auto mine = ab_shard(*suite, a, *resolved_b, **store);
        if (!mine) return report_error(mine.error());
        if (mine->first.empty()) return empty_shard(*suite, std::move(mine->second), a, console);  // more shards than cases
        shard = std::move(mine->second);
        resolved_a->filter.cases = resolved_b->filter.cases = std::move(mine->first);
    }
    AbOptions &o = a.options;
    o.store = store->get();
    o.compile_threshold_pct = suite->perf.compile_threshold_pct;
    o.profiles_dir = std::filesystem::absolute(a.out).parent_path() / "profiles";
    o.strict = o.strict || suite->perf.require_verdict;
    const TempDir config_dir("ab-config");
    if (auto m = config_dir.made(); !m) return report_error(m.error());
    if (auto c = sides_without_config(config_dir); !c) return report_error(c.error());
    std::vector<std::string> unloaded;
    auto side_a = make_side(*resolved_a, *suite, unloaded);
    if (!side_a) return report_error(side_a.error());
    auto side_b = make_side(*resolved_b, *suite, unloaded);
    if (!side_b) return report_error(side_b.error());
    if (!unloaded.empty()) return compared_nothing(*suite, a, unloaded, console);
    const std::time_t started = std::time(nullptr);
    auto results = timed_rounds(*suite, **side_a, **side_b, o, console);
    if (const size_t at = results ? std::string::npos : results.error().message.find(kDidNotLoad); at != std::string::npos)
        return compared_nothing(*suite, a, {results.error().message.substr(at + kDidNotLoad.size())}, console);  // a build side's `time` said so
    if (!results) return report_error(results.error());
    results->shard = std::move(shard);
    if (results->started_at.empty()) results->started_at = utc_timestamp(started);  // merge and the history order runs by it
    const std::vector<PerfRow> rows = perf_rows(*results);
    if (!rows.empty()) console.say("{}", perf_table(rows));
    console.say("{}", numerics_table(results->results));
    if (const std::string programs = program_changed_said(*results); !programs.empty()) console.say("{}\n", programs);
    // Every failure by its group, the compile and memory rows the tables above do not show included.
    if (const std::string failed = grouped_failures(*results); !failed.empty()) console.say("{}\n", failed);
    if (auto w = save_results(*results, a.out); !w) return report_error(w.error());
    if (auto w = write_reports(*results, ReportContext{}, a.reports); !w) return report_error(w.error());
    if (!results->baseline_fingerprint.empty() && !results->fingerprint.empty())
        console.say("\nWhat changed from A to B: {}", console_fingerprint_diff(diff_fingerprints(results->baseline_fingerprint, results->fingerprint)));
    // The closing line and the exit code come from the same verdict.
    console.say("\n{}: B ({}) against A ({}), {}; results in {}\n", ab_verdict_line(*results), (*side_b)->describe(), (*side_a)->describe(),
                rounds_said(*results), a.out);
    return results->verdict() == Verdict::Fail ? kExitDrift : kExitPass;
}

void add_side_options(CLI::App *cmd, AbArgs &a) {
    for (auto [which, side] : {std::pair{"a", &a.a}, std::pair{"b", &a.b}}) {
        const std::string w = which, other = w == "a" ? "the older build" : "the newer build";
        cmd->add_option("--" + w, side->build,
                        w == "a" ? "build A: an attngate binary, a build directory, or a command line (no shell; quote words with spaces); "
                                   "default with --a-plugin: this attngate"
                                 : "build B, likewise");
        cmd->add_option("--" + w + "-plugin", side->plugins,
                        fmt::format("side {} loads this kernel plugin .so ({} of your plugin; repeatable): each side's plugins run in "
                                    "their own attngate process, so both may hold the same kernel names", w, other));
        cmd->add_option("--" + w + "-adapter", side->adapters,
                        fmt::format("side {} is this adapter command (kept up for the whole run; repeatable), e.g. {}", w,
                                    w == "a" ? "the adapter in an older venv" : "the adapter in a newer venv"));
        cmd->add_option("--" + w + "-lockfile", side->lockfiles,
                        fmt::format("a lock file of side {} to record in its fingerprint (repeatable): what changed between the "
                                    "sides' lock files shows in \"What changed\"", w));
    }
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
    auto *cmd = app.add_subcommand("ab", "paired A/B: time two builds (of attngate, of your plugin, or two adapters) interleaved on the same machine");
    add_side_options(cmd, *a);
    add_store_options(cmd, a->store);
    add_suite_option(cmd, a->suite);
    add_round_options(cmd, a->options);
    cmd->add_option("--plugin", a->plugins,
                    "kernel plugin .so both sides load (repeatable); a side's own --a-plugin/--b-plugin replaces one that "
                    "provides a kernel of the same name");
    add_filter_options(cmd, a->filter);
    add_out_option(cmd, a->out, "where the A/B results.json goes")->capture_default_str();
    add_shard_option(cmd, a->shard,
                     "time only shard I of N (1-based) of the suite's cases, balanced by expected time; merge with `attngate merge`");
    add_report_format_options(cmd, a->reports);
    add_progress_option(cmd, console);
    return {cmd, [a, &console] { return ab(*a, console); }};
}

}  // namespace attngate::cli
