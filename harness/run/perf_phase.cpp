// The perf phase in named steps, as google/benchmark's runner: time, decide, reproduce,
// correct, emit (and profile the slower kernels), over every case x kernel at once.
#include "run/perf_phase.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "checks/compile_check.hpp"
#include "checks/cost_check.hpp"
#include "checks/perf_check.hpp"
#include "plan/kernel_info.hpp"
#include "run/instruction_phase.hpp"
#include "backend/calibration.hpp"
#include "run/perf_baselines.hpp"
#include "run/perf_windows.hpp"
#include "run/perf_targets.hpp"
#include "stats/perf_window.hpp"
#include "stats/stats.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// A regression's second timing and its decision against the same baseline.
struct Reproduction {
    TimingOutcome outcome;
    PerfCalibration calibration;
    PerfDecision decision;  ///< Insufficient when the second timing failed
};

/// One case x kernel on its way through the phase.
struct PerfRow {
    PerfTarget target;
    TimingOutcome first;
    PerfCalibration calibration;
    std::optional<PerfDecision> decision;  ///< against its baseline; nullopt: not compared
    bool windowed = false;                 ///< judged against its window of past runs (perf_windows.hpp)
    bool regressed = false;                ///< a regression before the run-wide pass: timed again
    std::optional<Reproduction> reproduction;
};

class PerfPhase {
public:
    PerfPhase(const Suite &suite, Backends &backends, const PerfPhaseOptions &o, const PerfBaselines &baselines,
              const PerfWindows &windows)
        : suite_(suite), backends_(backends), o_(o), baselines_(baselines), windows_(windows),
          // The calibration is timed even when not gated on (--no-calibration): the guard reads it.
          timing_{static_cast<int>(suite.perf.repetitions), suite.perf.min_time_s, o.isolation, o.timeout_s, true} {}

    /// Every target timed once, with the calibration workload interleaved.
    void time(std::vector<PerfTarget> targets) {
        const std::vector<TimingOutcome> outcomes =
            timed(targets, fmt::format("{} case x kernels, {} repetitions each", targets.size(), timing_.repetitions));
        for (size_t i = 0; i < targets.size(); ++i) rows_.push_back(PerfRow{std::move(targets[i]), outcomes[i], {}, {}, false, false, {}});
    }

    /// Each timed target against its baseline, before the run-wide pass. One that is a
    /// regression then (after the machine-speed guard) is timed again: that pass can only
    /// lower a verdict, so this covers every regression it leaves, here or in merge, where
    /// the pass over every shard's comparisons can keep one that this shard's pass dropped.
    void decide() {
        for (auto &row : rows_) {
            const std::string &case_id = row.target.spec->id, kernel = row.target.label();
            row.calibration = baselines_.calibration(case_id, kernel, row.first, o_.choices.calibrate);
            // A row is judged by its window of past runs once that is full enough; until then
            // by its single-run baseline where it has one, else it says it is collecting.
            const size_t runs = windows_.of(case_id, kernel).size();
            row.windowed = o_.choices.calibrate && row.first.error.empty() && !row.first.calibration_s.empty() && runs > 0 &&
                           (runs >= static_cast<size_t>(kMinWindowRuns) || baselines_.samples(case_id, kernel).empty());
        }
        shift_ = todays_shift();
        for (auto &row : rows_) {
            const std::string &case_id = row.target.spec->id, kernel = row.target.label();
            if (!row.windowed && (baselines_.samples(case_id, kernel).empty() || !row.first.error.empty())) continue;
            row.decision = judge(row, row.first, row.calibration);
            if (row.windowed) {
                row.regressed = row.decision->status == PerfStatus::Regression;
                continue;
            }
            PerfDecision raw = *row.decision;
            guard_machine_speed(raw, row.calibration.machine_move(), row.calibration.gated);
            row.regressed = raw.status == PerfStatus::Regression;
        }
    }

    /// The regressions timed a second time (a fresh child when isolated), each judged
    /// against the same baseline and guarded: what require_reproduction reads.
    void reproduce() {
        std::vector<PerfTarget> again;
        std::vector<PerfRow *> of;
        for (auto &row : rows_)
            if (row.regressed) again.push_back(row.target), of.push_back(&row);
        if (again.empty()) return;
        const std::vector<TimingOutcome> retimed =
            timed(again, fmt::format("{} regression{} timed again to see {} reproduce", again.size(), again.size() == 1 ? "" : "s",
                                     again.size() == 1 ? "it" : "them"));
        for (size_t j = 0; j < again.size(); ++j) {
            PerfRow &row = *of[j];
            Reproduction rep{retimed[j], baselines_.calibration(row.target.spec->id, row.target.label(), retimed[j], o_.choices.calibrate), {}};
            if (rep.outcome.error.empty()) {
                rep.decision = judge(row, rep.outcome, rep.calibration);
                if (!row.windowed) guard_machine_speed(rep.decision, rep.calibration.machine_move(), rep.calibration.gated);
            }
            row.reproduction = std::move(rep);
        }
    }

    /// Benjamini-Hochberg over the comparisons that were made, the machine-speed guard
    /// (calibrated or not: the machine may have moved), and a regression must reproduce.
    void correct() {
        std::vector<PerfDecision> made;
        for (const auto &row : rows_)
            if (row.decision) made.push_back(*row.decision);
        apply_benjamini_hochberg(made, suite_.perf.alpha);
        size_t j = 0;
        for (auto &row : rows_) {
            if (!row.decision) continue;
            *row.decision = made[j++];
            // A window's rows had the run-wide shift taken out instead (and their speed class checked).
            if (!row.windowed) guard_machine_speed(*row.decision, row.calibration.machine_move(), row.calibration.gated);
            if (row.reproduction) require_reproduction(*row.decision, row.reproduction->decision);
        }
    }

    /// A perf check per target into its results row, and a cost check when costs were asked for.
    void emit(RunResults &results) const {
        const Pricing *pricing = o_.cost && o_.cost->pricing ? &*o_.cost->pricing : nullptr;
        for (const auto &row : rows_) {
            CaseResult &r = results.results[row.target.result_index];
            if (!row.first.error.empty()) {
                r.checks.emplace_back(CheckName::Perf, Verdict::Error, row.first.error);  // it did not run to a time
                if (o_.cost) r.checks.emplace_back(CheckName::Cost, Verdict::Skip, "not priced: the kernel was not timed");
                continue;
            }
            const CheckResult perf = perf_check_of(row);  // a copy: the cost check below reads it after more are added
            r.checks.push_back(perf);
            if (o_.cost && !o_.cost->no_pricing.empty()) r.checks.emplace_back(CheckName::Cost, Verdict::Skip, o_.cost->no_pricing);
            if (!pricing) continue;
            const CaseSpec &c = *row.target.spec;
            r.checks.push_back(cost_check(perf, median(row.first.samples_s), perf.get<PerfMetrics>() ? priced_baseline_s(*perf.get<PerfMetrics>()) : std::nullopt,
                                          static_cast<double>(c.batch * c.seq_q), *pricing->find(o_.cost->device_class)));
        }
    }

    /// A profiler trace of every slower kernel, from its host: profilers could not see
    /// inside the kernel in our origin story.
    void profile(RunResults &results) const {
        for (const auto &row : rows_)
            for (auto &c : results.results[row.target.result_index].checks) {
                PerfMetrics *m = c.get<PerfMetrics>();
                if (!m || c.verdict != Verdict::Fail) continue;
                auto trace = backends_.host_of(row.target.kernel->spec.kernel)->profile(row.target.inv, o_.profiles_dir);
                if (trace) m->profile = std::filesystem::relative(*trace, o_.profiles_dir.parent_path()).string();
                else c.notes.push_back("no profiler trace: " + trace.error().message);
            }
    }

private:
    /// time_targets, its progress told as `what`.
    std::vector<TimingOutcome> timed(const std::vector<PerfTarget> &targets, const std::string &what) {
        TimingRequest req = timing_;
        const size_t total = targets.size() * static_cast<size_t>(std::max(req.repetitions, 0));
        if (const auto &tell = o_.on_timing) {
            tell(0, total, what);
            req.on_progress = [&tell, &what](size_t done, size_t all) { tell(done, all, what); };
        }
        return time_targets(targets, backends_, req);  // it tells the total timed after the last backend
    }

    double threshold_pct(const PerfRow &row) const { return row.target.spec->perf_threshold_pct.value_or(suite_.perf.threshold_pct); }

    DecisionPolicy policy_of(const PerfRow &row) const {
        DecisionPolicy policy;
        policy.alpha = suite_.perf.alpha;
        policy.threshold = threshold_pct(row) / 100.0;
        return policy;
    }

    /// The run-wide shift of this run's first timing against the windows: the median of the
    /// deviations of the rows whose windows are full enough to gate, taken out only while
    /// it stays within run noise or within what the window's runs moved by (removable_shift).
    double todays_shift() const {
        std::vector<double> deviations;
        for (const auto &row : rows_) {
            const auto &window = windows_.of(row.target.spec->id, row.target.label());
            if (row.windowed && window.size() >= static_cast<size_t>(kMinWindowRuns))
                deviations.push_back(fastest_reading(row.first.samples_s, row.first.calibration_s).fastest - mean(window));
        }
        return removable_shift(run_shift(std::move(deviations)), suite_.perf.threshold_pct / 100.0, windows_.run_shifts(),
                               suite_.perf.alpha);
    }

    /// One timing of a windowed row against its window, the run's shift taken out; a run on
    /// a machine of another speed class is not judged.
    PerfDecision judge_window(const PerfRow &row, const TimingOutcome &timed) const {
        const auto &window = windows_.of(row.target.spec->id, row.target.label());
        const FastestReading r = fastest_reading(timed.samples_s, timed.calibration_s);
        const WindowReading today{r.fastest - shift_, r.fastest - shift_, r.second - shift_};
        PerfDecision d = decide_window(today, window, policy_of(row));
        const double speed = fastest(timed.calibration_s) / windows_.calibration_s();
        if (d.status != PerfStatus::Insufficient && std::isfinite(speed) && std::max(speed, 1.0 / speed) > kSpeedClassFactor) {
            d.status = PerfStatus::TooNoisy;
            d.machine_moved = true;
            d.reason = fmt::format("not gated: this machine ran the calibration workload x{:.2f} of its time in the window's runs, "
                                   "beyond the x{:g} that one speed class spans: its window does not transfer here",
                                   speed, kSpeedClassFactor);
        }
        return d;
    }

    /// One timing of a row against its baseline, before the run-wide pass and the guard.
    PerfDecision judge(const PerfRow &row, const TimingOutcome &timed, const PerfCalibration &c) const {
        if (row.windowed) return judge_window(row, timed);
        const Seconds &base_s = baselines_.samples(row.target.spec->id, row.target.label());
        const DecisionPolicy policy = policy_of(row);
        return c.gated ? attngate::decide(relative_to_calibration(timed.samples_s, c.samples_s),
                                          relative_to_calibration(base_s, c.baseline_samples_s), policy)
                       : attngate::decide(timed.samples_s, base_s, policy);
    }

    CheckResult perf_check_of(const PerfRow &row) const {
        const PerfTarget &t = row.target;
        const std::string label = t.label();
        const CaseInputs &in = *t.inv.inputs;
        CheckResult check = perf_check({.samples_s = row.first.samples_s,
                                        .baseline_samples_s = baselines_.samples(t.spec->id, label),
                                        .decision = row.decision ? &*row.decision : nullptr,
                                        .baseline = row.windowed ? PerfBaselineState::Present : baselines_.state(t.spec->id, label),
                                        .baseline_note = row.decision ? "" : baselines_.missing_note(t.spec->id, label),
                                        .shape = attention_shape(*t.spec),
                                        .flops = case_flops(*t.spec, in.segment_ids_q, in.segment_ids_kv),
                                        .threshold_pct = threshold_pct(row),
                                        .machine_class = o_.machine_class,
                                        .strict = o_.choices.strict,
                                        .threads = suite_.timing_threads()});
        if (const auto &cpu = row.first.cpu_samples_s; !cpu.empty() && cpu.size() == row.first.samples_s.size())
            check.as<PerfMetrics>().cpu_samples_s = cpu;  // for the gbench export
        add_calibration(check, row.calibration);
        if (row.windowed) add_window(check, windows_.of(t.spec->id, label), shift_);
        if (const auto &rep = row.reproduction)
            add_reproduction(check, rep->outcome.samples_s, rep->calibration, rep->decision, rep->outcome.error);
        return check;
    }

    const Suite &suite_;
    Backends &backends_;
    const PerfPhaseOptions &o_;
    const PerfBaselines &baselines_;
    const PerfWindows &windows_;
    double shift_ = 0.0;  ///< the run-wide shift of the first timing (log), taken out of every windowed row
    TimingRequest timing_;
    std::vector<PerfRow> rows_;
};

/// The plan's case x kernels to time, in plan order; one that did not run cleanly gets
/// skipped perf (and cost) checks instead.
std::vector<PerfTarget> select_targets(const Suite &suite, const Plan &plan, const PerfInputs &inputs, RunResults &results,
                                       const PerfPhaseOptions &o) {
    std::vector<PerfTarget> targets;
    size_t index = 0;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels) {
            const size_t i = index++;
            CaseResult &r = results.results[i];
            if (!perf_selected(suite, *pc.spec, k->spec.label())) continue;
            if (r.output_sha256.empty()) {  // skipped (a feature the kernel lacks), crashed or failed to run
                // Why it was skipped: a feature the kernel does not declare, else what the other checks said
                // (an adapter's own "unsupported"), else it crashed or failed.
                std::string why = missing_features(*k->info, *pc.spec);
                const auto skipped = std::find_if(r.checks.begin(), r.checks.end(), [](const CheckResult &c) { return c.verdict == Verdict::Skip; });
                if (why.empty() && skipped != r.checks.end()) why = skipped->reason;
                why = "not timed: " + (why.empty() ? std::string("the kernel did not run cleanly") : why);
                r.checks.emplace_back(CheckName::Perf, Verdict::Skip, why);
                if (o.cost) r.checks.emplace_back(CheckName::Cost, Verdict::Skip, why);
                continue;
            }
            const auto in = inputs.find(pc.spec->id);
            ATTNGATE_CHECK(in != inputs.end());
            targets.push_back(PerfTarget{i, pc.spec, k, Invocation{&suite, pc.spec, in->second.get(), &k->spec}});
        }
    return targets;
}

/// A compile check for every case x kernel whose host reported a first-call time.
Result<void> add_compile_checks(const Suite &suite, RunResults &results, const PerfPhaseOptions &o) {
    auto key = baseline_key(CheckName::Compile, suite.name, o.machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(*o.store, *key);
    if (!file) return std::unexpected(file.error());
    for (auto &r : results.results) {
        if (!r.compile_s) continue;
        const auto *base = *file ? (*file)->values_of<CompileBaseline>(r.case_id, r.kernel) : nullptr;
        std::optional<double> base_s = base ? base->compile_s : std::nullopt;
        if (base_s && !std::isfinite(*base_s)) base_s.reset();  // null: not measured
        r.checks.push_back(compile_check(*r.compile_s, base_s, suite.perf.compile_threshold_pct));
    }
    return {};
}

}  // namespace

Result<void> run_perf_phase(const Suite &suite, const Plan &plan, Backends &backends, const PerfInputs &inputs,
                            RunResults &results, const PerfPhaseOptions &options) {
    if (auto c = add_compile_checks(suite, results, options); !c) return c;
    std::vector<PerfTarget> targets = select_targets(suite, plan, inputs, results, options);
    if (targets.empty()) return {};
    if (options.choices.metric == PerfMetric::Instructions) return instruction_phase(suite, targets, backends, results, options);
    auto baselines = PerfBaselines::load(*options.store, suite, options.machine_class);
    if (!baselines) return std::unexpected(baselines.error());
    auto windows = PerfWindows::load(*options.store, suite.name, options.machine_class, kCalibrationWorkload, suite.timing_threads());
    if (!windows) return std::unexpected(windows.error());
    PerfPhase phase(suite, backends, options, *baselines, *windows);
    phase.time(std::move(targets));
    phase.decide();
    phase.reproduce();
    phase.correct();
    phase.emit(results);
    if (!options.profiles_dir.empty()) phase.profile(results);
    const Pricing *pricing = options.cost && options.cost->pricing ? &*options.cost->pricing : nullptr;
    if (pricing) return add_workloads(results, options.cost->workloads, *pricing, options.choices.workload_kernel, options.choices.strict);
    return {};
}

}  // namespace attngate
