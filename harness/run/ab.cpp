// A/B orchestration: outputs first (numerics, goldens, compile, memory), then ABBA rounds of
// timings, then the paired decision rule over every case x kernel at once.
#include "run/ab.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/ranges.h>

#include "checks/compile_check.hpp"
#include "checks/golden_check.hpp"
#include "checks/memory_check.hpp"
#include "checks/numerics_check.hpp"
#include "checks/program_check.hpp"
#include "io/files.hpp"
#include "checks/perf_check.hpp"
#include "checks/throughput.hpp"
#include "results/fingerprint.hpp"
#include "run/run.hpp"
#include "store/golden.hpp"
#include "plan/inputs.hpp"

namespace attngate {

namespace {

/// The golden check of one side's output, when the suite has goldens.
std::optional<CheckResult> golden_of(const std::optional<GoldenManifest> &manifest, const Suite &suite, const AbOptions &o,
                                     const CaseSpec &c, const AbOutput &out) {
    if (!manifest || !out.error.empty()) return std::nullopt;
    const GoldenEntry *e = manifest->find(c.id);
    if (!e) return std::nullopt;
    auto want = load_golden(suite, *o.store, *e);
    if (!want || want->size() != out.values.size()) return std::nullopt;
    double allowance = 0.0;
    if (out.rounding.any()) {
        const CaseInputs in = generate_inputs(suite, c);
        allowance = rounding_allowance(out.rounding, c.dtype, e->output_max_abs, in.v);
    }
    return golden_check(out.values, *want, *e, allowance);
}

/// Side A's ([0]) and side B's ([1]) paired samples per row.
using Samples = std::map<AbLabel, std::vector<double>>[2];

/// Times one round: the rows `wanted` accepts (a side that times whole rounds times all),
/// calling `tick` after each row timed on both sides (after the round, for whole rounds).
using RoundFn =
    std::function<Result<void>(int round, const std::function<bool(const AbLabel &)> &wanted, const std::function<void()> &tick)>;

/// Seconds a side gets to print its fingerprint (`env --json` reads dpkg's file lists).
constexpr double kFingerprintTimeoutS = 60;

/// More rounds for the rows still undecided come this many at a time.
constexpr int kExtraRounds = 10;

/// The looks a row can get: one after o.rounds, one after each kExtraRounds more.
int looks_of(const AbOptions &o) {
    const int extra = std::max(0, o.max_rounds - o.rounds);
    return 1 + (extra + kExtraRounds - 1) / kExtraRounds;
}

/// The decision policy of every look: Bonferroni over the looks (per_look), so that
/// looking again at a row that did not change does not multiply its chance of a false
/// regression.
DecisionPolicy looks_policy(const AbOptions &o) { return per_look(o.policy, looks_of(o)); }

/// Sequential rounds: every row for o.rounds rounds, then kExtraRounds more at a time for
/// the rows whose pairs so far cannot place their ratio against the threshold (too noisy,
/// or a CI that still reaches it with a median past half of it: wants_more_repetitions),
/// until none is left or o.max_rounds is reached. A clear row costs the minimum; the time
/// goes to the rows whose verdict more pairs can still change. max_rounds <= rounds:
/// fixed rounds.
Result<void> sequential_rounds(const AbOptions &o, size_t rows, const AbProgressFn &progress, Samples &samples,
                               const RoundFn &one_round) {
    const int last = std::max(o.rounds, o.max_rounds);
    const DecisionPolicy policy = looks_policy(o);
    // rows == 0: a side that times whole rounds, one step each.
    AbProgress p{0, std::max<size_t>(rows, 1) * static_cast<size_t>(std::max(o.rounds, 0)), 0, o.rounds};
    const auto step = [&] {
        ++p.done;
        if (progress) progress(p);
    };
    std::set<AbLabel> open;
    bool every_row = true;
    for (int round = 0; round < last;) {
        const int until = every_row ? o.rounds : std::min(last, round + kExtraRounds);
        for (; round < until; ++round) {
            p.round = round + 1;
            if (progress) progress(p);
            auto r = one_round(round, [&](const AbLabel &label) { return every_row || open.contains(label); }, step);
            if (!r) return r;
        }
        if (round >= last) break;
        every_row = false;
        open.clear();
        for (const auto &[label, a] : samples[0])
            if (wants_more_repetitions(decide_paired(samples[1][label], a, policy))) open.insert(label);
        if (open.empty()) break;
        p.rounds = std::min(last, round + kExtraRounds);
        p.total = p.done + (rows ? open.size() : 1) * static_cast<size_t>(p.rounds - round);
    }
    return {};
}

/// Each round times each wanted row on A and on B back to back, the order alternating by
/// round and row (A B, then B A: drift cancels).
Result<void> pair_by_row(AbSide &a, AbSide &b, const std::vector<AbLabel> &rows, const AbOptions &o, const AbProgressFn &progress,
                         Samples &samples) {
    return sequential_rounds(o, rows.size(), progress, samples, [&](int round, const auto &wanted, const auto &tick) -> Result<void> {
        for (size_t i = 0; i < rows.size(); ++i) {
            if (!wanted(rows[i])) continue;
            double t[2];
            for (int step = 0; step < 2; ++step) {
                const int side = (round + i) % 2 == 0 ? step : 1 - step;
                auto got = (side == 0 ? a : b).time_row(rows[i], o.round);
                if (!got) return std::unexpected(got.error());
                t[side] = *got;
            }
            samples[0][rows[i]].push_back(t[0]);
            samples[1][rows[i]].push_back(t[1]);
            tick();
        }
        return {};
    });
}

/// Each round times every row on one side, then on the other (A B, then B A): a side that
/// times whole rounds only, so a round past o.rounds times the decided rows too.
Result<void> pair_by_round(AbSide &a, AbSide &b, const AbOptions &o, const AbProgressFn &progress, Samples &samples) {
    return sequential_rounds(o, 0, progress, samples, [&](int round, const auto &, const auto &tick) -> Result<void> {
        std::map<AbLabel, double> got[2];
        for (int step = 0; step < 2; ++step) {
            const int side = (round % 2 == 0) ? step : 1 - step;
            auto t = (side == 0 ? a : b).round(o.round);
            if (!t) return std::unexpected(t.error());
            got[side] = std::move(*t);
        }
        for (const auto &[label, t] : got[0])  // a pair needs both sides of the same round
            if (got[1].contains(label)) {
                samples[0][label].push_back(t);
                samples[1][label].push_back(got[1][label]);
            }
        tick();
        return {};
    });
}

/// The suite's golden manifest, when it has one.
Result<std::optional<GoldenManifest>> manifest_if_any(const Suite &suite, Store &store) {
    auto has = has_golden_manifest(suite, store);
    if (!has) return std::unexpected(has.error());
    if (!*has) return std::optional<GoldenManifest>();
    auto m = load_golden_manifest(suite, store);
    if (!m) return std::unexpected(m.error());
    return std::optional<GoldenManifest>(std::move(*m));
}

/// Both sides' paired samples: row by row where both sides time rows alone, else by round.
Result<void> pair_timings(AbSide &a, AbSide &b, const AbOptions &o, const AbProgressFn &progress, Samples &samples) {
    auto rows_a = a.rows(o.round);
    if (!rows_a) return std::unexpected(rows_a.error());
    auto rows_b = b.rows(o.round);
    if (!rows_b) return std::unexpected(rows_b.error());
    std::vector<AbLabel> rows;  // timed one at a time on both sides
    for (const auto &label : *rows_a)
        if (std::find(rows_b->begin(), rows_b->end(), label) != rows_b->end()) rows.push_back(label);
    return rows.empty() ? pair_by_round(a, b, o, progress, samples) : pair_by_row(a, b, rows, o, progress, samples);
}

/// What run_ab judges each case x kernel of side B with: the goldens, side A's outputs,
/// and the paired decisions (after Benjamini-Hochberg over every row at once).
class AbJudge {
public:
    AbJudge(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &o, std::optional<GoldenManifest> manifest, Samples &samples)
        : suite_(suite), a_(a), b_(b), o_(o), manifest_(std::move(manifest)), samples_(samples) {
        const DecisionPolicy policy = looks_policy(o);
        for (const auto &[label, sa] : samples_[0]) {
            decided_[label] = decisions_.size();
            decisions_.push_back(decide_paired(samples_[1][label], sa, policy));
        }
        apply_benjamini_hochberg(decisions_, policy.alpha);
    }

    /// B's TPU program against A's, both sides' texts kept beside the results (programs/).
    std::optional<CheckResult> program_check_of(const AbOutput *oa, const AbOutput &ob) const {
        if (!ob.program) return std::nullopt;
        for (const AbOutput *side : {oa, &ob})
            if (side && side->program && !o_.profiles_dir.empty())
                for (const auto &part : side->program->parts) {
                    const auto path = o_.profiles_dir.parent_path() / "programs" / (part.sha256 + ".mlir");
                    std::error_code ec;
                    if (!std::filesystem::exists(path, ec)) (void)write_file_atomic(path, part.text);  // the check still stands without its file
                }
        std::optional<ProgramReference> ref;
        if (oa && oa->program && oa->program->unavailable.empty()) {
            ref = ProgramReference{"side A", {}, {}, {}};
            for (const auto &p : oa->program->parts) ref->labels.push_back(p.label()), ref->sha256.push_back(p.sha256);
            const ProgramObservation *a_program = &*oa->program;
            ref->text_of = [a_program](const std::string &sha) -> std::optional<std::string> {
                for (const auto &p : a_program->parts)
                    if (p.sha256 == sha) return p.text;
                return std::nullopt;
            };
        }
        const std::string why = !oa || !oa->program ? "side A has no TPU program (its host cannot lower kernels)"
                                                    : "side A's kernel did not lower: " + oa->program->unavailable;
        return program_check(*ob.program, ref, suite_.program_stable, why);
    }

    /// B's golden check, the numerics of B against A, and B's compile time against A's.
    void output_checks(CaseResult &r, const CaseSpec &c, const AbOutput *oa, const AbOutput &ob) const {
        std::optional<CheckResult> golden_b = golden_of(manifest_, suite_, o_, c, ob);
        const double tolerance = golden_b ? golden_b->as<GoldenMetrics>().tolerance.value_or(0.0) : 0.0;
        if (golden_b) r.checks.push_back(*golden_b);
        if (auto p = program_check_of(oa, ob)) r.checks.push_back(std::move(*p));
        if (!oa || !oa->error.empty()) {
            r.checks.emplace_back(CheckName::Numerics, Verdict::Skip, oa ? "side A has no output: " + oa->error : "side A did not run this case");
            return;
        }
        CheckResult n = numerics_check(diff_outputs(oa->values, ob.values), sketch_output(ob.values), "side A", tolerance,
                                       c.bitwise_stable.value_or(o_.bitwise || suite_.bitwise_stable));
        if (auto golden_a = golden_of(manifest_, suite_, o_, c, *oa); golden_a && golden_a->verdict == Verdict::Fail)
            n.notes.push_back("side A fails its golden here (" + golden_a->reason + "); side B " +
                              (golden_b && golden_b->verdict == Verdict::Pass ? "passes it" : "does too"));
        r.checks.push_back(std::move(n));
        if (oa->compile_s && ob.compile_s) r.checks.push_back(compile_check(*ob.compile_s, oa->compile_s, o_.compile_threshold_pct));
    }

    /// B's memory: its leaks and its workspace promise, as `run` judges them, and its peak
    /// against A's in place of a baseline; A's own failure is a note.
    std::optional<CheckResult> memory_check_of(const AbOutput *oa, const AbOutput &ob) const {
        if (!ob.memory) {
            if (ob.memory_unavailable.empty()) return std::nullopt;
            return CheckResult(CheckName::Memory, Verdict::Skip, "side B: " + ob.memory_unavailable);
        }
        const MemoryPolicy policy = memory_policy(suite_);
        const MemoryObservation *ma = oa && oa->memory ? &*oa->memory : nullptr;
        std::optional<MemoryBaseline> a_peak;
        if (ma && ma->abi_measured) a_peak = MemoryBaseline{ma->abi_peak_bytes, ma->rss_peak_delta_bytes, std::nullopt};
        CheckResult m = memory_check(*ob.memory, a_peak, policy, ob.workspace_growth, "side A");
        if (!a_peak && m.verdict == Verdict::Pass && ob.memory->abi_measured) {
            const std::string why = !oa ? "side A did not run this case"
                                    : !oa->error.empty() ? "side A has no output: " + oa->error
                                    : !oa->memory_unavailable.empty() ? "side A: " + oa->memory_unavailable
                                                                      : "side A's host observed no ABI memory";
            m.reason = fmt::format("no leak; peak {} B (no peak to compare with: {})", ob.memory->abi_peak_bytes, why);
        }
        if (ma)
            if (CheckResult own = memory_check(*ma, std::nullopt, policy, oa->workspace_growth); own.verdict == Verdict::Fail)
                m.notes.push_back("side A fails its memory check here (" + own.reason + "); side B " +
                                  (m.verdict == Verdict::Pass ? "passes it" : "does too"));
        return m;
    }

    /// The paired perf check of a row both sides timed, with both sides' traces when slower.
    std::optional<CheckResult> perf_check_of(const AbLabel &label, const CaseSpec &c) {
        const auto it = decided_.find(label);
        if (it == decided_.end()) return std::nullopt;
        if (!flops_.contains(c.id)) {  // per case: its segment ids count, as in the perf phase
            const CaseInputs in = generate_inputs(suite_, c);
            flops_[c.id] = case_flops(c, in.segment_ids_q, in.segment_ids_kv);
        }
        CheckResult p = perf_check({.samples_s = samples_[1][label],
                                    .baseline_samples_s = samples_[0][label],
                                    .decision = &decisions_[it->second],
                                    .shape = attention_shape(c),
                                    .flops = flops_[c.id],
                                    .threshold_pct = 100 * o_.policy.threshold,
                                    .machine_class = "A/B paired on this machine",
                                    .strict = o_.strict,
                                    .paired = true});
        PerfMetrics &m = p.as<PerfMetrics>();
        m.mode = PerfMode::Ab;
        m.looks = looks_of(o_);  // merge redecides with it
        m.a = a_.describe();
        m.b = b_.describe();
        if (p.verdict == Verdict::Fail && !o_.profiles_dir.empty())
            for (auto [side, dir, trace_of] : {std::tuple{&a_, "profile_a", &m.profile_a}, std::tuple{&b_, "profile_b", &m.profile_b}}) {
                auto trace = side->profile(label, o_.profiles_dir / dir);
                if (trace) *trace_of = std::filesystem::relative(*trace, o_.profiles_dir.parent_path()).string();
                else p.notes.push_back("no profiler trace: " + trace.error().message);
            }
        return p;
    }

private:
    const Suite &suite_;
    AbSide &a_, &b_;
    const AbOptions &o_;
    std::optional<GoldenManifest> manifest_;
    Samples &samples_;
    std::vector<PerfDecision> decisions_;
    std::map<AbLabel, size_t> decided_;
    std::map<std::string, double> flops_;
};

/// The results' header: the sides (beside the fingerprint, not in it) and each side's own
/// fingerprint, A's as the one B is compared with, taken after the timings so that it never
/// runs beside them. A side that cannot say is noted, not fatal.
RunResults ab_header(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &o) {
    RunResults results;
    results.tool_version = tool_version();
    results.suite = suite.name;
    results.suite_file = suite.file.string();
    results.checks = {CheckName::Perf, CheckName::Numerics, CheckName::Golden, CheckName::Compile, CheckName::Program, CheckName::Memory};
    results.ab = json::object{{"a", a.describe()}, {"b", b.describe()}};
    results.host_name = host_name();
    for (auto [side, key, into] : {std::tuple{&a, "a", &results.baseline_fingerprint}, std::tuple{&b, "b", &results.fingerprint}}) {
        auto fp = side->fingerprint(std::min(o.round.timeout_s, kFingerprintTimeoutS));
        if (fp) *into = std::move(*fp);
        else results.ab[std::string(key) + "_fingerprint_error"] = fp.error().message;
    }
    return results;
}

}  // namespace

std::string ab_verdict_line(const RunResults &results) {
    size_t regressions = 0, noisy = 0, errors = 0;
    std::map<std::string, size_t> failed;  // by check name
    for (const auto &r : results.results)
        for (const auto &c : r.checks) {
            const PerfMetrics *m = c.get<PerfMetrics>();
            const bool regression = m && m->status == PerfCheckStatus::Regression, too_noisy = m && m->status && !perf_gated(*m->status);
            if (c.verdict == Verdict::Error) ++errors;
            else if (c.verdict == Verdict::Fail && regression) ++regressions;
            else if (c.verdict == Verdict::Fail) ++failed[too_noisy ? "perf (too noisy to gate, --strict)" : c.name()];
            else if (too_noisy) ++noisy;
        }
    std::vector<std::string> said;
    if (!results.complete) said.push_back("the run did not complete");
    if (regressions) said.push_back(fmt::format("REGRESSION in {} case x kernel(s)", regressions));
    for (const auto &[check, n] : failed) said.push_back(fmt::format("{} failed on {} case x kernel(s)", check, n));
    if (errors) said.push_back(fmt::format("{} check(s) errored", errors));
    const std::string noisy_said = noisy ? fmt::format("{} case x kernel(s) too noisy to gate", noisy) : "";
    if (results.verdict() != Verdict::Fail) return "passed: no regression" + (noisy ? ", but " + noisy_said : "");
    if (noisy) said.push_back(noisy_said);
    return "FAILED: " + (said.empty() ? std::string("a check failed") : fmt::format("{}", fmt::join(said, "; ")));
}

Result<RunResults> run_ab(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &o, const AbProgressFn &progress) {
    auto manifest = manifest_if_any(suite, *o.store);
    if (!manifest) return std::unexpected(manifest.error());
    AbRoundOptions with_memory = o.round;
    with_memory.memory = true;
    auto out_a = a.outputs(with_memory);
    if (!out_a) return std::unexpected(out_a.error());
    auto out_b = b.outputs(with_memory);
    if (!out_b) return std::unexpected(out_b.error());
    Samples samples;
    if (auto paired = pair_timings(a, b, o, progress, samples); !paired) return std::unexpected(paired.error());

    RunResults results = ab_header(suite, a, b, o);
    AbJudge judge(suite, a, b, o, std::move(*manifest), samples);
    for (const auto &[label, ob] : *out_b) {
        const CaseSpec *c = suite.find_case(label.first);
        if (!c) return fail(ErrorKind::Infra, "side B ran case \"{}\", which {} does not have", label.first, suite.file.string());
        CaseResult &r = results.results.emplace_back();
        r.case_id = label.first;
        r.kernel = label.second;
        r.params = case_params(*c);
        if (!ob.error.empty()) {
            const bool skipped = ob.error.starts_with("skipped: ");
            r.checks.push_back(skipped ? CheckResult(CheckName::Golden, Verdict::Skip, ob.error.substr(9))
                                       : CheckResult(CheckName::Golden, Verdict::Fail, "side B: " + ob.error));
            const auto ia = out_a->find(label);
            if (auto p = judge.program_check_of(ia == out_a->end() ? nullptr : &ia->second, ob)) r.checks.push_back(std::move(*p));
            continue;
        }
        r.compile_s = ob.compile_s;
        const auto ia = out_a->find(label);
        judge.output_checks(r, *c, ia == out_a->end() ? nullptr : &ia->second, ob);
        if (auto m = judge.memory_check_of(ia == out_a->end() ? nullptr : &ia->second, ob)) r.checks.push_back(std::move(*m));
        if (auto p = judge.perf_check_of(label, *c)) r.checks.push_back(std::move(*p));
    }
    results.complete = true;
    return results;
}

}  // namespace attngate
