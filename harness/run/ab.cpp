// A/B orchestration: outputs first (numerics, goldens, compile), then ABBA rounds of
// timings, then the paired decision rule over every case x kernel at once.
#include "run/ab.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "checks/compile_check.hpp"
#include "checks/golden_check.hpp"
#include "checks/numerics_check.hpp"
#include "checks/perf_check.hpp"
#include "checks/throughput.hpp"
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

CheckResult failed(const std::string &check, const std::string &why) { return CheckResult{check, Verdict::Fail, why, {}, {}}; }

using Samples = std::map<AbLabel, std::vector<double>>[2];

/// Times one round: the rows `wanted` accepts (a side that times whole rounds times all),
/// calling `step` after each row timed on both sides (after the round, for whole rounds).
using RoundFn =
    std::function<Result<void>(int round, const std::function<bool(const AbLabel &)> &wanted, const std::function<void()> &step)>;

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
    return sequential_rounds(o, rows.size(), progress, samples, [&](int round, const auto &wanted, const auto &step) -> Result<void> {
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
            step();
        }
        return {};
    });
}

/// Each round times every row on one side, then on the other (A B, then B A): a side that
/// times whole rounds only, so a round past o.rounds times the decided rows too.
Result<void> pair_by_round(AbSide &a, AbSide &b, const AbOptions &o, const AbProgressFn &progress, Samples &samples) {
    return sequential_rounds(o, 0, progress, samples, [&](int round, const auto &, const auto &step) -> Result<void> {
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
        step();
        return {};
    });
}

}  // namespace

Result<RunResults> run_ab(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &o, const AbProgressFn &progress) {
    std::optional<GoldenManifest> manifest;
    auto has = has_golden_manifest(suite, *o.store);
    if (!has) return std::unexpected(has.error());
    if (*has) {
        auto m = load_golden_manifest(suite, *o.store);
        if (!m) return std::unexpected(m.error());
        manifest = std::move(*m);
    }
    auto out_a = a.outputs(o.round);
    if (!out_a) return std::unexpected(out_a.error());
    auto out_b = b.outputs(o.round);
    if (!out_b) return std::unexpected(out_b.error());

    std::map<AbLabel, std::vector<double>> samples[2];
    auto rows_a = a.rows(o.round);
    if (!rows_a) return std::unexpected(rows_a.error());
    auto rows_b = b.rows(o.round);
    if (!rows_b) return std::unexpected(rows_b.error());
    std::vector<AbLabel> rows;  // timed one at a time on both sides
    for (const auto &label : *rows_a)
        if (std::find(rows_b->begin(), rows_b->end(), label) != rows_b->end()) rows.push_back(label);
    auto paired = rows.empty() ? pair_by_round(a, b, o, progress, samples) : pair_by_row(a, b, rows, o, progress, samples);
    if (!paired) return std::unexpected(paired.error());

    RunResults results;
    results.tool_version = tool_version();
    results.suite = suite.name;
    results.suite_file = suite.file.string();
    results.checks = {"perf", "numerics", "golden", "compile"};
    results.fingerprint = json::object{{"ab", json::object{{"a", a.describe()}, {"b", b.describe()}}}};
    if (auto fa = a.fingerprint(); !fa.empty()) results.baseline_fingerprint = fa;
    if (auto fb = b.fingerprint(); !fb.empty())
        for (const auto &[k, v] : fb) results.fingerprint[k] = v;

    const DecisionPolicy policy = looks_policy(o);
    std::vector<AbLabel> labels;
    std::vector<PerfDecision> decisions;
    for (const auto &[label, sa] : samples[0]) {
        labels.push_back(label);
        decisions.push_back(decide_paired(samples[1][label], sa, policy));
    }
    apply_benjamini_hochberg(decisions, policy.alpha);
    std::map<AbLabel, size_t> decided;
    for (size_t i = 0; i < labels.size(); ++i) decided[labels[i]] = i;

    std::map<std::string, double> flops;
    for (const auto &[label, ob] : *out_b) {
        const CaseSpec *c = suite.find_case(label.first);
        if (!c) return fail(ErrorKind::Infra, "side B ran case \"{}\", which {} does not have", label.first, suite.file.string());
        CaseResult r;
        r.case_id = label.first;
        r.kernel = label.second;
        r.params = case_params(*c);
        const auto ia = out_a->find(label);
        const AbOutput *oa = ia == out_a->end() ? nullptr : &ia->second;
        const bool skipped = ob.error.starts_with("skipped: ");
        if (!ob.error.empty()) {
            r.checks.push_back(skipped ? CheckResult{"golden", Verdict::Skip, ob.error.substr(9), {}, {}} : failed("golden", "side B: " + ob.error));
            results.results.push_back(std::move(r));
            continue;
        }
        r.compile_s = ob.compile_s;
        std::optional<CheckResult> golden_b = golden_of(manifest, suite, o, *c, ob);
        const double tolerance = golden_b && golden_b->metrics.contains("tolerance") ? golden_b->metrics.at("tolerance").to_number<double>() : 0.0;
        if (golden_b) r.checks.push_back(*golden_b);
        if (oa && oa->error.empty()) {
            CheckResult n = numerics_check(diff_outputs(oa->values, ob.values), sketch_output(ob.values), "side A", tolerance,
                                           c->bitwise_stable.value_or(o.bitwise || suite.bitwise_stable));
            if (auto golden_a = golden_of(manifest, suite, o, *c, *oa); golden_a && golden_a->verdict == Verdict::Fail)
                n.notes.push_back("side A fails its golden here (" + golden_a->reason + "); side B " +
                                  (golden_b && golden_b->verdict == Verdict::Pass ? "passes it" : "does too"));
            r.checks.push_back(std::move(n));
            if (oa->compile_s && ob.compile_s) {
                CheckResult cc = compile_check(*ob.compile_s, oa->compile_s, o.compile_threshold_pct);
                r.checks.push_back(std::move(cc));
            }
        } else {
            r.checks.push_back(CheckResult{"numerics", Verdict::Skip,
                                           oa ? "side A has no output: " + oa->error : "side A did not run this case", {}, {}});
        }
        if (const auto it = decided.find(label); it != decided.end()) {
            if (!flops.contains(c->id)) {  // per case: its segment ids count, as in the perf phase
                const CaseInputs in = generate_inputs(suite, *c);
                flops[c->id] = case_flops(*c, in.segment_ids_q, in.segment_ids_kv);
            }
            CheckResult p = perf_check(samples[1][label], samples[0][label], &decisions[it->second], PerfBaselineState::Present, "",
                                       attention_shape(*c), flops[c->id], 100 * o.policy.threshold,
                                       "A/B paired on this machine", o.strict);
            p.metrics["mode"] = "ab";
            p.metrics["looks"] = looks_of(o);  // merge redecides with it
            p.metrics["a"] = a.describe();
            p.metrics["b"] = b.describe();
            if (p.verdict == Verdict::Fail && !o.profiles_dir.empty())
                for (auto [side, key] : {std::pair<AbSide *, const char *>{&a, "profile_a"}, {&b, "profile_b"}}) {
                    auto trace = side->profile(label, o.profiles_dir / key);
                    if (trace) p.metrics[key] = std::filesystem::relative(*trace, o.profiles_dir.parent_path()).string();
                    else p.notes.push_back("no profiler trace: " + trace.error().message);
                }
            r.checks.push_back(std::move(p));
        }
        results.results.push_back(std::move(r));
    }
    results.complete = true;
    return results;
}

}  // namespace attngate
