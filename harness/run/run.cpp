// Running a suite: goldens verified first, then every case x kernel observed through its
// backend and judged by the requested checks; inputs are generated once per case and
// shared by every kernel, backend and the perf phase.
#include "run/run.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "backend/in_process_backend.hpp"
#include "checks/contract_check.hpp"
#include "checks/golden_check.hpp"
#include "checks/numerics_check.hpp"
#include "checks/paged_reads.hpp"
#include "checks/memory_check.hpp"
#include "io/files.hpp"
#include "io/process.hpp"
#include "plan/inputs.hpp"
#include "results/fingerprint.hpp"
#include "results/results_writer.hpp"
#include "run/baseline_fingerprint.hpp"
#include "run/perf_phase.hpp"
#include "run/run_programs.hpp"
#include "run/sharding.hpp"
#include "run/unloaded.hpp"
#include "run/workloads.hpp"
#include "store/baseline_store.hpp"
#include "store/baseline_update.hpp"
#include "store/golden.hpp"
#include "store/keys.hpp"

namespace attngate {

const char *tool_version() { return "attngate " ATTNGATE_VERSION; }

namespace {

bool wants(const std::vector<CheckName> &checks, CheckName check) {
    return std::find(checks.begin(), checks.end(), check) != checks.end();
}

/// --checks as check names.
Result<std::vector<CheckName>> requested_checks(const RunOptions &o) {
    std::vector<CheckName> checks;
    for (const auto &name : o.checks) {
        if (const std::string why = not_requestable(name); !why.empty()) return fail(ErrorKind::Usage, "--checks: {}", why);
        checks.push_back(*parse_enum<CheckName>(name));
    }
    if (const std::string why = checks_apart(o.checks); !why.empty()) return fail(ErrorKind::Usage, "--checks: {}", why);
    return checks;
}

/// Everything a case x kernel needs besides the case and kernel themselves.
struct RunContext {
    const Suite &suite;
    const RunOptions &options;
    std::vector<CheckName> checks;  ///< the requested ones
    std::string machine;            ///< the machine class perf baselines are kept per
    std::string numerics;           ///< the class numerics baselines are kept per: the kernels' path and compiler
    Backends &backends;
    const RunResults *previous = nullptr;
    std::optional<BaselineFile> memory_baselines;
    std::optional<BaselineFile> numerics_baselines;
    std::optional<BaselineFile> program_baselines;
    std::optional<GoldenManifest> manifest;
    /// Why a planned case x kernel cannot run, decided before anything runs.
    std::map<std::pair<const CaseSpec *, const PlannedKernel *>, std::string> unsupported;
};

/// What results.json keeps of a crash, on the checks it errored.
CrashRecord crash_record(const CrashInfo &c) {
    CrashRecord r{c.kind, c.seconds, c.stderr_tail, std::nullopt, std::nullopt, std::nullopt};
    if (!c.signal.empty()) r.signal = c.signal;
    if (c.kind == "exit") r.exit_code = c.exit_code;
    if (!c.message.empty()) r.message = c.message;
    return r;
}

/// Every requested correctness check gets the same verdict and reason (a crash, an error, a
/// skip); the perf phase reports perf and cost for such a kernel as not timed.
void all_checks(CaseResult &r, const RunContext &ctx, Verdict v, const std::string &reason,
                const std::optional<CrashInfo> &crash = std::nullopt) {
    for (const CheckName check : ctx.checks)
        if (check == CheckName::Golden || check == CheckName::Memory) {
            r.checks.emplace_back(check, v, reason);
            if (crash) r.checks.back().crash = crash_record(*crash);
        }
    if (v == Verdict::Skip && wants(ctx.checks, CheckName::Golden)) r.checks.emplace_back(CheckName::Numerics, Verdict::Skip, reason);
}

/// The output against the kernel's own accepted output (the numerics baseline), or else
/// the last run's at the same --out.
CheckResult numerics_with_reference(const RunContext &ctx, const CaseResult &r, const Observation &o, const CaseSpec &c,
                                    double tolerance) {
    const OutputSketch now = sketch_output(o.output);
    const bool bitwise = c.bitwise_stable.value_or(ctx.suite.bitwise_stable);
    if (ctx.numerics_baselines)
        if (const auto *kept = ctx.numerics_baselines->values_of<NumericsBaseline>(c.id, r.kernel))
            if (auto base = OutputSketch::of(*kept))
                return numerics_check(diff_sketches(*base, now), now, "the numerics baseline", tolerance, bitwise);
    if (ctx.previous)
        if (const CaseResult *last = ctx.previous->find(c.id, r.kernel))
            if (const auto *recorded = find_metrics<NumericsMetrics>(*last))
                if (auto base = OutputSketch::of(*recorded))
                    return numerics_check(diff_sketches(*base, now), now, "the last run", tolerance, bitwise);
    return numerics_unreferenced(now, fmt::format("no numerics baseline for path \"{}\" yet (accept one: attngate baseline update --checks numerics)",
                                                  ctx.numerics));
}

/// The numerics check says whether repeated calls (and a second process) agreed bit for
/// bit; a kernel that did not fails only where the suite asks for `deterministic`.
void add_determinism(CheckResult &numerics, const Observation &o, bool required) {
    if (!o.contract_watched && !o.nondeterminism) return;  // nothing was repeated
    const auto &nd = o.nondeterminism;
    NumericsMetrics &m = numerics.as<NumericsMetrics>();
    if (!nd || nd->reads_output) {  // reading the output buffer is the contract check's
        m.deterministic = true;
        return;
    }
    m.deterministic = false;
    m.nondeterministic_elements = nd->elements;
    m.nondeterministic_max_abs = nd->max_abs;
    m.nondeterministic_across = nd->across;
    const std::string what = fmt::format("non-deterministic: max |Δ| {:.3g}, {} elements differ across {}", nd->max_abs, nd->elements, nd->across);
    if (required) {
        numerics.verdict = Verdict::Fail;
        numerics.reason = what + " (the suite asks for deterministic outputs)";
    } else {
        numerics.notes.push_back(what);
    }
}

/// What an adapter kernel adds, even when its plain call failed: its TPU program, the interpreter's contract check.
void add_adapter_rows(const RunContext &ctx, CaseResult &r, Observation &o, const CaseSpec &c, bool adapter) {
    const BaselineFile *kept = ctx.program_baselines ? &*ctx.program_baselines : nullptr;
    const ProgramContext pc{absolute_path(ctx.options.results_path).parent_path(), ctx.options.store, kept, ctx.previous, ctx.suite.program_stable};
    if (o.program) r.checks.push_back(program_row_check(pc, c.id, r.kernel, *o.program));
    if (o.contract_watched && adapter) r.checks.push_back(interpreter_contract_check(o.contract_violations, r.kernel, ctx.suite.known_races));
}

std::optional<MemoryBaseline> memory_baseline(const RunContext &ctx, const CaseSpec &c, const std::string &kernel) {
    const auto *kept = ctx.memory_baselines ? ctx.memory_baselines->values_of<MemoryBaseline>(c.id, kernel) : nullptr;
    return kept ? std::optional(*kept) : std::nullopt;
}

}  // namespace

void ask_memory(ObserveRequest &req, const Suite &suite, const CaseSpec &c) {
    req.memory = true;
    req.memory_calls = c.memory_calls.value_or(suite.memory_calls);
    req.warmup_calls = suite.warmup_calls;
    req.memory_budget_bytes = suite.memory_budget_mb << 20;
}

MemoryPolicy memory_policy(const Suite &suite) {
    MemoryPolicy policy;
    policy.peak_growth_pct = suite.peak_growth_pct;
    policy.retention_limit_bytes = suite.retention_limit_kb << 10;
    return policy;
}

namespace {

CaseResult run_one(const RunContext &ctx, const Invocation &inv, const PlannedKernel &k, const GoldenEntry *golden,
                   const std::vector<double> *want) {
    const CaseSpec &c = *inv.spec;
    CaseResult r;
    r.case_id = c.id;
    r.kernel = k.spec.label();
    r.kernel_version = k.info->version;
    r.kernel_origin = k.info->origin;
    r.params = case_params(c);
    const RunOptions &opt = ctx.options;

    if (const auto it = ctx.unsupported.find({&c, &k}); it != ctx.unsupported.end()) {
        all_checks(r, ctx, Verdict::Skip, it->second);
        return r;
    }
    ObserveRequest req;
    if (wants(ctx.checks, CheckName::Memory)) ask_memory(req, ctx.suite, c);
    req.isolation = opt.isolation;
    req.timeout_s = opt.timeout_s.value_or(ctx.suite.timeout_s);
    req.program = wants(ctx.checks, CheckName::Golden);
    Observation o = ctx.backends.host_of(k.spec.kernel)->observe(inv, req);
    const bool adapter = ctx.backends.host_of(k.spec.kernel)->name().starts_with("adapter");
    r.seconds = o.seconds;
    r.compile_s = o.compile_s;
    if (o.crash) {
        all_checks(r, ctx, Verdict::Error, o.crash->describe(), o.crash);
        return r;
    }
    if (!o.unsupported.empty()) {
        all_checks(r, ctx, Verdict::Skip, "unsupported: " + o.unsupported);
        add_adapter_rows(ctx, r, o, c, adapter);  // a kernel that cannot run here may still lower for the TPU
        return r;
    }
    if (!o.host_error.empty()) {  // the host failed the call: no output to judge, as for a crash
        all_checks(r, ctx, Verdict::Error, o.host_error);
        return r;
    }
    if (o.kernel_rc != 0) {
        all_checks(r, ctx, Verdict::Error, fmt::format("kernel returned error {}: {}", o.kernel_rc, o.kernel_error));
        add_adapter_rows(ctx, r, o, c, adapter);  // it may still lower; the interpreter may say why it failed
        return r;
    }
    r.output_sha256 = sha256_hex(std::string_view(reinterpret_cast<const char *>(o.output.data()), o.output.size() * sizeof(float)));
    if (golden) {
        r.checks.push_back(golden_check(o.output, *want, *golden,
                                        rounding_allowance(k.info->rounding, c.dtype, golden->output_max_abs, inv.inputs->v)));
        name_paged_worst(r.checks.back(), c);
        if (o.unreadable) attribute_unreadable(r.checks.back(), c, *o.unreadable);
        const double tolerance = r.checks.back().as<GoldenMetrics>().tolerance.value_or(0.0);
        r.checks.push_back(numerics_with_reference(ctx, r, o, c, tolerance));
        add_determinism(r.checks.back(), o, c.deterministic.value_or(ctx.suite.deterministic));
    }
    add_adapter_rows(ctx, r, o, c, adapter);
    if (o.contract_watched && !adapter) r.checks.push_back(contract_check(o.contract_violations, o.nondeterminism));
    if (o.memory) r.checks.push_back(memory_check(*o.memory, memory_baseline(ctx, c, r.kernel), memory_policy(ctx.suite), k.info->workspace_growth));
    return r;
}

/// Decides, before anything runs, which planned case x kernels cannot run and why; an
/// extra origin (a plugin, an adapter) none of whose kernels can run a case is bad input.
Result<void> decide_support(RunContext &ctx, const Plan &plan) {
    std::map<std::string, size_t> planned, runnable;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels) {
            ++planned[k->info->origin];
            std::string why = missing_features(*k->info, *pc.spec);
            if (why.empty())
                why = ctx.backends.host_of(k->spec.kernel)
                          ->unsupported(Invocation{&ctx.suite, pc.spec, nullptr, &k->spec}, ctx.options.timeout_s.value_or(ctx.suite.timeout_s));
            if (!why.empty()) ctx.unsupported[{pc.spec, k}] = why;
            else ++runnable[k->info->origin];
        }
    // An origin that --kernel/--case filtered out entirely was the user's explicit choice.
    for (const auto &origin : ctx.options.extra_origins)
        if (planned[origin] > 0 && runnable[origin] == 0)
            return fail(ErrorKind::BadInput,
                        "{}: loaded, but none of its kernels supports any case of suite {} (compare the kernels' "
                        "features, `attngate kernels`, with the suite's cases)",
                        origin, ctx.suite.name);
    return {};
}

/// Every golden verified before anything runs or is written (a corrupt or stale golden is
/// bad input, exit 2, never drift), and the numerics and memory baselines the checks read.
Result<void> load_references(RunContext &ctx, const Plan &plan) {
    Store &store = *ctx.options.store;
    const auto baselines = [&](std::optional<BaselineFile> &into, CheckName check, std::string_view machine) -> Result<void> {
        auto key = baseline_key(check, ctx.suite.name, machine);
        if (!key) return std::unexpected(key.error());
        auto file = load_baseline_file(store, *key);
        if (!file) return std::unexpected(file.error());
        into = std::move(*file);
        return {};
    };
    if (wants(ctx.checks, CheckName::Golden)) {
        auto m = load_golden_manifest(ctx.suite, store);
        if (!m) return std::unexpected(m.error());
        for (const auto &pc : plan.cases)
            if (auto g = load_golden(ctx.suite, store, *m->find(pc.spec->id)); !g) return std::unexpected(g.error());
        ctx.manifest = std::move(*m);
        if (auto b = baselines(ctx.numerics_baselines, CheckName::Numerics, ctx.numerics); !b) return b;
        if (auto b = baselines(ctx.program_baselines, CheckName::Program, ""); !b) return b;
    }
    if (wants(ctx.checks, CheckName::Memory)) return baselines(ctx.memory_baselines, CheckName::Memory, "");
    return {};
}

/// The last run's results at the same --out, for the numerics check to diff against.
Result<std::optional<RunResults>> previous_results(const RunOptions &o, const Suite &suite) {
    auto previous = replaceable_results(o.results_path);
    if (previous && *previous && (*previous)->suite != suite.name) previous->reset();
    return previous;
}

/// The results before the first case: what ran, on what, against which baselines.
Result<RunResults> new_results(const RunContext &ctx, const Plan &plan, json::object fingerprint, json::object shard) {
    RunResults results;
    results.tool_version = tool_version();
    results.suite = ctx.suite.name;
    results.suite_file = ctx.suite.file.string();
    results.started_at = utc_timestamp();
    results.host_name = host_name();
    results.checks = ctx.checks;
    results.fingerprint = std::move(fingerprint);
    results.machine_class = ctx.machine;
    results.numerics_class = ctx.numerics;
    results.shard = std::move(shard);
    // "What changed" is against the fingerprint of the baselines this run uses, plugins included.
    auto base = baselines_fingerprint(*ctx.options.store, ctx.suite, plan,
                                      {ctx.numerics_baselines ? &*ctx.numerics_baselines : nullptr,
                                       ctx.memory_baselines ? &*ctx.memory_baselines : nullptr},
                                      wants(ctx.checks, CheckName::Perf) ? std::optional(ctx.machine) : std::nullopt, results.fingerprint);
    if (!base) return std::unexpected(base.error());
    results.baseline_fingerprint = std::move(*base);
    return results;
}

/// Every planned case x kernel observed and checked, case by case, results written after
/// each case; returns each case's inputs when the perf phase will time them.
Result<PerfInputs> run_cases(const RunContext &ctx, const Plan &plan, RunResults &results, ResultsWriter &writer,
                             const ProgressFn &progress) {
    const size_t total = plan.runs();
    size_t done = 0;
    PerfInputs kept;  // the perf phase times cases after all of them ran: their inputs stay
    for (const auto &pc : plan.cases) {
        const CaseSpec &c = *pc.spec;
        const GoldenEntry *entry = ctx.manifest ? ctx.manifest->find(c.id) : nullptr;
        std::optional<std::vector<double>> want;
        if (entry) {
            auto w = load_golden(ctx.suite, *ctx.options.store, *entry);
            if (!w) return std::unexpected(w.error());
            want = std::move(*w);
        }
        auto in = std::make_shared<const CaseInputs>(generate_inputs(ctx.suite, c));
        for (const PlannedKernel *k : pc.kernels) {
            const Invocation inv{&ctx.suite, &c, in.get(), &k->spec};
            results.results.push_back(run_one(ctx, inv, *k, entry, want ? &*want : nullptr));
            if (progress) progress(results.results.back(), ++done, total);
        }
        if (wants(ctx.checks, CheckName::Perf)) kept[c.id] = in;
        for (const auto &b : ctx.backends.all()) b->release_case(c);
        if (auto w = writer.save(results); !w) return std::unexpected(w.error());
    }
    return kept;
}

PerfPhaseOptions perf_phase_options(const RunContext &ctx, const CostInputs *cost, TimingProgressFn on_timing) {
    const RunOptions &options = ctx.options;
    PerfPhaseOptions po;
    po.on_timing = std::move(on_timing);
    po.isolation = options.isolation;
    po.machine_class = ctx.machine;
    po.store = options.store;
    po.cost = cost;
    po.profiles_dir = std::filesystem::absolute(options.results_path).parent_path() / "profiles";
    po.choices = options.perf;
    po.choices.strict = options.perf.strict || ctx.suite.perf.require_verdict;
    return po;
}

}  // namespace

Result<RunResults> run_suite(const Suite &suite, Backends &backends, const RunOptions &requested, const RunProgress &progress) {
    RunOptions options = requested;
    options.results_path = absolute_path(options.results_path);  // before any kernel could chdir()
    auto checks = requested_checks(options);
    if (!checks) return std::unexpected(checks.error());
    const auto previous = previous_results(options, suite);  // before anything runs: --out must be ours to replace
    if (!previous) return std::unexpected(previous.error());
    // A kernel source that did not load fails the run; the others still run, unless a kernel the
    // suite or --kernel names is missing (it may be what did not load): then nothing runs.
    auto unloaded = backends.load_errors();
    auto plan = make_plan(suite, backends.kernels(), options.extra_origins, options.filter);
    if (!plan && !unloaded.empty() && names_a_missing_kernel(suite, backends.kernels(), options.filter))
        return unloaded_results(suite, options, *checks, backends, std::move(unloaded));
    if (!plan) return std::unexpected(plan.error());
    if (auto w = check_workload_kernel(options.perf.workload_kernel, *plan); !w) return std::unexpected(w.error());
    auto fingerprint = collect_fingerprint(backends.kernels(), backends.fingerprint(), options.lockfiles);
    if (!fingerprint) return std::unexpected(fingerprint.error());
    RunContext ctx{suite, options, *checks, machine_class(options.machine, builtin_numerics_path()), numerics_class(), backends, nullptr, {}, {}, {}, {}, {}};
    json::object shard;
    if (options.shard) {
        auto s = shard_plan(*plan, suite, *options.shard, ShardUnit::Run, *options.store, ctx.machine, ctx.checks, suite.perf.alpha);
        if (!s) return std::unexpected(s.error());
        shard = std::move(*s);
    }
    if (auto s = decide_support(ctx, *plan); !s) return std::unexpected(s.error());
    if (auto r = load_references(ctx, *plan); !r) return std::unexpected(r.error());
    std::optional<CostInputs> cost;  // read before the first case: a bad pricing file costs no run
    if (wants(ctx.checks, CheckName::Perf) && wants(ctx.checks, CheckName::Cost)) {
        auto c = load_cost_inputs(*options.store, options.device_class);
        if (!c) return std::unexpected(c.error());
        cost = std::move(*c);
    }
    ctx.previous = *previous ? &**previous : nullptr;
    ResultsWriter writer(options.results_path);
    auto results = new_results(ctx, *plan, std::move(*fingerprint), std::move(shard));
    if (!results) return std::unexpected(results.error());
    results->load_errors = std::move(unloaded);
    if (progress.on_replaced) writer.on_first_save(progress.on_replaced);
    // A kernel in this process can end it: results.json then says so (complete: false).
    if (!options.isolation)
        if (auto w = writer.save(*results); !w) return std::unexpected(w.error());
    auto kept = run_cases(ctx, *plan, *results, writer, progress.on_case);
    if (!kept) return std::unexpected(kept.error());
    if (wants(ctx.checks, CheckName::Perf))
        if (auto p = run_perf_phase(suite, *plan, backends, *kept, *results, perf_phase_options(ctx, cost ? &*cost : nullptr, progress.on_timing)); !p)
            return std::unexpected(p.error());
    results->complete = true;
    if (auto w = writer.save(*results); !w) return std::unexpected(w.error());
    return results;
}

}  // namespace attngate
