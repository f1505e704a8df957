// Perf phase: timing, baseline comparison, cost.
#include "run/perf_phase.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>

#include "backend/calibration.hpp"
#include "checks/compile_check.hpp"
#include "checks/cost_check.hpp"
#include "checks/instructions_check.hpp"
#include "checks/perf_check.hpp"
#include "io/files.hpp"
#include "io/npy.hpp"
#include "plan/inputs.hpp"
#include "run/instruction_counts.hpp"
#include "stats/stats.hpp"
#include "store/baseline_store.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// One case x kernel to time.
struct Target {
    size_t result_index;
    const CaseSpec *spec;
    const PlannedKernel *kernel;
    Invocation inv;
};

/// Times the targets through their backends: each backend gets its own targets at once
/// (the in-process one interleaves them in one child). One outcome per target.
std::vector<TimingOutcome> time_targets(const std::vector<Target> &targets, Backends &backends, const TimingRequest &req) {
    std::vector<TimingOutcome> out(targets.size());
    for (const auto &b : backends.all()) {
        std::vector<size_t> mine;
        std::vector<Invocation> invs;
        for (size_t i = 0; i < targets.size(); ++i)
            if (backends.host_of(targets[i].kernel->spec.kernel) == b.get()) mine.push_back(i), invs.push_back(targets[i].inv);
        if (invs.empty()) continue;
        TimingRequest mine_req = req;
        if (!req.iterations.empty()) {
            mine_req.iterations.clear();
            for (size_t i : mine) mine_req.iterations.push_back(req.iterations.at(i));
        }
        auto got = b->time(invs, mine_req);
        ATTNGATE_CHECK(got.size() == invs.size());
        for (size_t j = 0; j < mine.size(); ++j) out[mine[j]] = std::move(got[j]);
    }
    return out;
}

/// The baseline file for this machine class, and why there is none when there is none.
Result<std::optional<BaselineFile>> perf_baselines(const Suite &suite, const PerfPhaseOptions &o, std::string &note) {
    auto key = baseline_key("perf", suite.name, o.machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(*o.store, *key);
    if (!file || *file) return file;
    note = fmt::format("no perf baseline for machine class \"{}\" (record one: attngate baseline update --checks perf)", o.machine_class);
    auto keys = o.store->list(baseline_prefix("perf"));
    if (!keys) return std::unexpected(keys.error());
    for (const auto &other_key : *keys)
        if (other_key.ends_with("/" + suite.name + ".json"))
            if (auto other = load_baseline_file(*o.store, other_key); other && *other)
                note = fmt::format("perf baseline was recorded on machine class \"{}\", this is \"{}\": timings not compared",
                                   (*other)->machine_class, o.machine_class);
    return file;
}

std::vector<double> baseline_samples(const BaselineFile *file, const std::string &case_id, const std::string &kernel,
                                     const char *key = "samples_s") {
    std::vector<double> out;
    if (const BaselineEntry *e = file ? file->find(case_id, kernel) : nullptr)
        if (const auto *s = e->values.if_contains(key); s && s->is_array())
            for (const auto &x : s->get_array()) out.push_back(x.to_number<double>());
    return out;
}

/// Whether a case x kernel is gated on calibrated times, with both sides' calibration
/// samples, or why not when the baseline cannot be. The baseline's samples are kept
/// whenever they are of this build's workload, gated or not (`wanted` false:
/// --no-calibration): the machine-speed guard reads them.
PerfCalibration calibration_of(const BaselineFile *file, const std::string &case_id, const std::string &kernel,
                               const TimingOutcome &outcome, bool wanted) {
    PerfCalibration c;
    c.samples_s = outcome.calibration_s;
    c.parallel_samples_s = outcome.parallel_calibration_s;
    c.workload = kCalibrationWorkload;
    const BaselineEntry *e = file ? file->find(case_id, kernel) : nullptr;
    if (!e) return c;
    std::string why_not;
    if (c.samples_s.empty()) {
        why_not = "this kernel's host timed no calibration workload (a remote adapter): gated on absolute time";
    } else {
        c.baseline_samples_s = baseline_samples(file, case_id, kernel, "calibration_s");
        c.baseline_parallel_samples_s = baseline_samples(file, case_id, kernel, "parallel_calibration_s");
        const auto *w = e->values.if_contains("calibration_workload");
        const std::string base_workload = w && w->is_string() ? std::string(w->get_string()) : "";
        if (c.baseline_samples_s.empty())
            why_not = "the baseline has no calibration samples (recorded before calibrated baselines): gated on absolute time; "
                      "re-record it (attngate baseline update --checks perf) to gate time relative to the machine";
        else if (base_workload != c.workload)
            why_not = fmt::format("the baseline's calibration workload \"{}\" is not this build's \"{}\": gated on absolute time",
                                  base_workload, c.workload);
        if (!why_not.empty()) c.baseline_samples_s.clear(), c.baseline_parallel_samples_s.clear();
    }
    c.gated = wanted && why_not.empty();
    if (wanted) c.note = std::move(why_not);
    return c;
}

/// A case x kernel the perf phase times: the suite's perf.kernels pick the kernel, and a
/// case kept for correctness coverage only ("timed": false) is not timed at all.
bool perf_selected(const Suite &suite, const CaseSpec &c, const std::string &label) {
    return c.timed && (suite.perf.kernels.empty() ||
                       std::find(suite.perf.kernels.begin(), suite.perf.kernels.end(), label) != suite.perf.kernels.end());
}

/// --perf-metric instructions: one call of each in-process case x kernel counted under
/// callgrind in one child, each against this machine class's instruction baseline.
Result<void> instruction_phase(const Suite &suite, const std::vector<Target> &targets, Backends &backends, RunResults &results,
                               const PerfPhaseOptions &o) {
    auto key = baseline_key("instructions", suite.name, o.machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(*o.store, *key);
    if (!file) return std::unexpected(file.error());
    const std::string unavailable = instruction_counting_unavailable();
    const auto in_process = [&](const Target &t) { return backends.host_of(t.kernel->spec.kernel)->name() == "in-process"; };
    CountRequest request{suite.file, o.plugins, {}, o.timeout_s};
    for (const auto &t : targets)
        if (in_process(t)) request.labels.emplace_back(t.spec->id, t.kernel->spec.label());
    std::map<std::pair<std::string, std::string>, double> counts;
    std::string count_error;
    if (unavailable.empty() && !request.labels.empty()) {
        auto c = count_under_callgrind(request);
        if (c) counts = std::move(*c);
        else count_error = c.error().message;
    }
    for (const auto &t : targets) {
        CaseResult &r = results.results[t.result_index];
        const std::string label = t.kernel->spec.label();
        const auto add = [&](Verdict v, std::string why) { r.checks.push_back(CheckResult{"instructions", v, std::move(why), {}, {}}); };
        if (o.cost) r.checks.push_back(CheckResult{"cost", Verdict::Skip, "not priced: --perf-metric instructions measures no time", {}, {}});
        if (!unavailable.empty()) add(Verdict::Skip, unavailable);
        else if (!in_process(t))
            add(Verdict::Skip, fmt::format("not counted: instructions are counted in-process only, and {} runs in {}", label,
                                           backends.host_of(t.kernel->spec.kernel)->name()));
        else if (!count_error.empty()) add(Verdict::Error, count_error);
        else if (const auto it = counts.find({t.spec->id, label}); it == counts.end())
            add(Verdict::Error, "the counting child reported no count for this case x kernel");
        else {
            std::optional<double> base;
            if (const BaselineEntry *e = *file ? (*file)->find(t.spec->id, label) : nullptr)
                if (const auto *v = e->values.if_contains("instructions"); v && v->is_number()) base = v->to_number<double>();
            const std::string note = fmt::format(
                "no instructions baseline for {} / {} on machine class \"{}\" (record one: attngate baseline update --checks instructions)",
                t.spec->id, label, o.machine_class);
            r.checks.push_back(instructions_check(it->second, base, t.spec->perf_threshold_pct.value_or(suite.perf.threshold_pct),
                                                  o.machine_class, note, o.strict));
        }
    }
    return {};
}

}  // namespace

/// A compile check for every case x kernel whose host reported a first-call time.
Result<void> add_compile_checks(const Suite &suite, RunResults &results, const PerfPhaseOptions &options) {
    auto key = baseline_key("compile", suite.name, options.machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(*options.store, *key);
    if (!file) return std::unexpected(file.error());
    for (auto &r : results.results) {
        if (!r.compile_s) continue;
        std::optional<double> base;
        if (const BaselineEntry *e = *file ? (*file)->find(r.case_id, r.kernel) : nullptr)
            if (const auto *v = e->values.if_contains("compile_s"); v && v->is_number()) base = v->to_number<double>();
        r.checks.push_back(compile_check(*r.compile_s, base, suite.perf.compile_threshold_pct));
    }
    return {};
}

Result<void> run_perf_phase(const Suite &suite, const Plan &plan, Backends &backends, const PerfInputs &inputs,
                            RunResults &results, const PerfPhaseOptions &options) {
    if (auto c = add_compile_checks(suite, results, options); !c) return c;
    std::vector<Target> targets;
    size_t index = 0;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels) {
            const size_t i = index++;
            CaseResult &r = results.results[i];
            if (!perf_selected(suite, *pc.spec, k->spec.label())) continue;
            if (r.output_sha256.empty()) {  // skipped, crashed or failed to run
                for (const char *check : {"perf", "cost"})
                    if (check == std::string("perf") || options.cost)
                        r.checks.push_back(CheckResult{check, Verdict::Skip, "not timed: the kernel did not run cleanly", {}, {}});
                continue;
            }
            const auto in = inputs.find(pc.spec->id);
            ATTNGATE_CHECK(in != inputs.end());
            targets.push_back(Target{i, pc.spec, k, Invocation{&suite, pc.spec, in->second.get(), &k->spec}});
        }
    if (targets.empty()) return {};
    if (options.metric == PerfMetric::Instructions) return instruction_phase(suite, targets, backends, results, options);

    std::string note;
    auto base = perf_baselines(suite, options, note);
    if (!base) return std::unexpected(base.error());
    const BaselineFile *base_file = *base ? &**base : nullptr;
    // The calibration is timed even when not gated on (--no-calibration): the guard reads it.
    const TimingRequest timing{static_cast<int>(suite.perf.repetitions), suite.perf.min_time_s, options.isolation, options.timeout_s,
                               true};
    const std::vector<TimingOutcome> outcomes = time_targets(targets, backends, timing);

    std::vector<PerfDecision> decisions(targets.size());
    std::vector<PerfCalibration> calibrations(targets.size());
    std::vector<bool> decided(targets.size(), false);
    // One timing of target i against its baseline, before the run-wide pass and the guard.
    const auto judge = [&](size_t i, const TimingOutcome &timed, const PerfCalibration &c) {
        const auto base_s = baseline_samples(base_file, targets[i].spec->id, targets[i].kernel->spec.label());
        DecisionPolicy policy;
        policy.alpha = suite.perf.alpha;
        policy.threshold = targets[i].spec->perf_threshold_pct.value_or(suite.perf.threshold_pct) / 100.0;
        return c.gated ? decide(relative_to_calibration(timed.samples_s, c.samples_s),
                                relative_to_calibration(base_s, c.baseline_samples_s), policy)
                       : decide(timed.samples_s, base_s, policy);
    };
    for (size_t i = 0; i < targets.size(); ++i) {
        const std::string &case_id = targets[i].spec->id, kernel = targets[i].kernel->spec.label();
        calibrations[i] = calibration_of(base_file, case_id, kernel, outcomes[i], options.calibrate);
        if (baseline_samples(base_file, case_id, kernel).empty() || !outcomes[i].error.empty()) continue;
        decisions[i] = judge(i, outcomes[i], calibrations[i]);
        decided[i] = true;
    }
    // A regression against the baseline must reproduce (require_reproduction). Every case x
    // kernel that is one before the run-wide pass is timed again: that pass can only lower
    // a verdict, so this covers every regression it leaves, here or in merge, where the
    // pass over every shard's comparisons can keep one that this shard's pass dropped.
    std::vector<bool> time_again(targets.size(), false);
    for (size_t i = 0; i < targets.size(); ++i)
        if (decided[i]) {
            PerfDecision raw = decisions[i];
            guard_machine_speed(raw, calibrations[i].machine_move(), calibrations[i].gated);
            time_again[i] = raw.status == PerfStatus::Regression;
        }
    {  // the run-wide correction counts only the comparisons that were made
        std::vector<PerfDecision> made;
        for (size_t i = 0; i < targets.size(); ++i)
            if (decided[i]) made.push_back(decisions[i]);
        apply_benjamini_hochberg(made, suite.perf.alpha);
        for (size_t i = 0, j = 0; i < targets.size(); ++i)
            if (decided[i]) decisions[i] = made[j++];
    }
    for (size_t i = 0; i < targets.size(); ++i)  // calibrated or not: the machine may have moved
        if (decided[i]) guard_machine_speed(decisions[i], calibrations[i].machine_move(), calibrations[i].gated);

    std::vector<Target> again;
    std::vector<size_t> again_of;
    for (size_t i = 0; i < targets.size(); ++i)
        if (time_again[i]) again.push_back(targets[i]), again_of.push_back(i);
    struct Reproduction {
        std::vector<double> samples_s;
        PerfCalibration calibration;
        PerfDecision decision;
        std::string error;
    };
    std::map<size_t, Reproduction> reproductions;
    const std::vector<TimingOutcome> retimed = again.empty() ? std::vector<TimingOutcome>{} : time_targets(again, backends, timing);
    for (size_t j = 0; j < again.size(); ++j) {
        const size_t i = again_of[j];
        Reproduction &rep = reproductions[i];
        rep.samples_s = retimed[j].samples_s;
        rep.calibration = calibration_of(base_file, targets[i].spec->id, targets[i].kernel->spec.label(), retimed[j], options.calibrate);
        rep.error = retimed[j].error;
        if (rep.error.empty()) {
            rep.decision = judge(i, retimed[j], rep.calibration);
            guard_machine_speed(rep.decision, rep.calibration.machine_move(), rep.calibration.gated);
        }
        require_reproduction(decisions[i], rep.decision);
    }

    const Pricing *pricing = options.cost && options.cost->pricing ? &*options.cost->pricing : nullptr;
    const std::string no_pricing = options.cost ? options.cost->no_pricing : "";
    for (size_t i = 0; i < targets.size(); ++i) {
        const Target &t = targets[i];
        CaseResult &r = results.results[t.result_index];
        if (!outcomes[i].error.empty()) {
            r.checks.push_back(CheckResult{"perf", Verdict::Error, outcomes[i].error, {}, {}});  // it did not run to a time
            if (options.cost) r.checks.push_back(CheckResult{"cost", Verdict::Skip, "not priced: the kernel was not timed", {}, {}});
            continue;
        }
        const AttentionShape shape = attention_shape(*t.spec);
        const auto base_s = baseline_samples(base_file, t.spec->id, t.kernel->spec.label());
        PerfBaselineState state = PerfBaselineState::Present;
        std::string why;
        if (!decided[i]) {
            state = !base_file && note.find("recorded on") != std::string::npos ? PerfBaselineState::OtherMachine
                                                                                : PerfBaselineState::Missing;
            why = base_file ? fmt::format("no perf baseline for {} / {} on machine class \"{}\"", t.spec->id,
                                          t.kernel->spec.label(), options.machine_class)
                            : note;
        }
        const CaseInputs &in = *t.inv.inputs;
        const double flops = case_flops(*t.spec, in.segment_ids_q, in.segment_ids_kv);
        const double threshold = t.spec->perf_threshold_pct.value_or(suite.perf.threshold_pct);
        r.checks.push_back(perf_check(outcomes[i].samples_s, base_s, decided[i] ? &decisions[i] : nullptr, state, why, shape, flops,
                                      threshold, options.machine_class, options.strict));
        if (const auto &cpu = outcomes[i].cpu_samples_s; !cpu.empty() && cpu.size() == outcomes[i].samples_s.size())
            r.checks.back().metrics["cpu_samples_s"] = json::array(cpu.begin(), cpu.end());  // for the gbench export
        add_calibration(r.checks.back(), calibrations[i]);
        if (const auto rep = reproductions.find(i); rep != reproductions.end())
            add_reproduction(r.checks.back(), rep->second.samples_s, rep->second.calibration, rep->second.decision, rep->second.error);
        if (!no_pricing.empty()) r.checks.push_back(CheckResult{"cost", Verdict::Skip, no_pricing, {}, {}});
        if (pricing)
            r.checks.push_back(cost_check(median(outcomes[i].samples_s), base_s.empty() ? std::nullopt : std::optional(median(base_s)),
                                          static_cast<double>(t.spec->batch * t.spec->seq_q), *pricing->find(options.cost->device_class)));
    }
    if (!options.profiles_dir.empty())  // profilers could not see inside the kernel in our origin story
        for (size_t i = 0; i < targets.size(); ++i) {
            CaseResult &r = results.results[targets[i].result_index];
            for (auto &c : r.checks) {
                if (c.check != "perf" || c.verdict != Verdict::Fail) continue;
                auto trace = backends.host_of(targets[i].kernel->spec.kernel)->profile(targets[i].inv, options.profiles_dir);
                if (trace) c.metrics["profile"] = std::filesystem::relative(*trace, options.profiles_dir.parent_path()).string();
                else c.notes.push_back("no profiler trace: " + trace.error().message);
            }
        }
    if (pricing) return add_workloads(results, options.cost->workloads, *pricing, options.workload_kernel, options.strict);
    return {};
}

Result<void> write_plan_outputs(const Suite &suite, const Plan &plan, Backends &backends, const std::filesystem::path &dir,
                                bool isolation) {
    json::array index;
    size_t n = 0;
    for (const auto &pc : plan.cases) {
        const CaseInputs in = generate_inputs(suite, *pc.spec);
        for (const PlannedKernel *k : pc.kernels) {
            const Invocation inv{&suite, pc.spec, &in, &k->spec};
            json::object entry{{"case", pc.spec->id}, {"kernel", k->spec.label()}};
            Backend *b = backends.host_of(k->spec.kernel);
            std::string why = missing_features(*k->info, *pc.spec);
            if (why.empty()) why = b->unsupported(inv);
            Observation o;
            if (why.empty()) {
                ObserveRequest req;
                req.isolation = isolation;
                req.timeout_s = suite.timeout_s;
                o = b->observe(inv, req);
            }
            if (!why.empty()) entry["error"] = "skipped: " + why;
            else if (o.crash) entry["error"] = o.crash->describe();
            else if (!o.unsupported.empty()) entry["error"] = "skipped: unsupported: " + o.unsupported;
            else if (!o.host_error.empty()) entry["error"] = o.host_error;
            else if (o.kernel_rc != 0) entry["error"] = fmt::format("kernel returned error {}: {}", o.kernel_rc, o.kernel_error);
            else {
                const std::string file = fmt::format("{}.npy", n++);
                if (auto w = write_file_atomic(dir / file, serialize_npy(make_npy(std::span<const float>(o.output), output_shape(*pc.spec)))); !w)
                    return w;
                entry["file"] = file;
            }
            if (o.compile_s) entry["compile_s"] = *o.compile_s;
            if (k->info->rounding.output) entry["rounds_output"] = true;
            if (k->info->rounding.probabilities) entry["rounds_probabilities"] = true;
            index.push_back(std::move(entry));
        }
        for (const auto &b : backends.all()) b->release_case(*pc.spec);
    }
    return write_file_atomic(dir / "index.json", pretty_json(index));
}

PlanTimer::PlanTimer(const Suite &suite, const Plan &plan, Backends &backends) : backends_(backends) {
    for (const auto &pc : plan.cases) {
        bool any = false;
        for (const PlannedKernel *k : pc.kernels) any |= perf_selected(suite, *pc.spec, k->spec.label());
        if (!any) continue;
        inputs_.push_back(std::make_unique<CaseInputs>(generate_inputs(suite, *pc.spec)));
        for (const PlannedKernel *k : pc.kernels)
            if (perf_selected(suite, *pc.spec, k->spec.label()))
                rows_.push_back(Row{pc.spec, k, Invocation{&suite, pc.spec, inputs_.back().get(), &k->spec}});
    }
}

std::vector<std::pair<std::string, std::string>> PlanTimer::labels() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &r : rows_) out.emplace_back(r.spec->id, r.kernel->spec.label());
    return out;
}

Result<std::vector<LabelledSamples>> PlanTimer::time(const TimingRequest &timing, const std::vector<size_t> &which) {
    std::vector<Target> targets;
    for (size_t i : which) {
        ATTNGATE_CHECK(i < rows_.size());
        targets.push_back(Target{0, rows_[i].spec, rows_[i].kernel, rows_[i].inv});
    }
    const auto outcomes = time_targets(targets, backends_, timing);
    std::vector<LabelledSamples> out;
    for (size_t i = 0; i < targets.size(); ++i) {
        if (!outcomes[i].error.empty())
            return fail(ErrorKind::Infra, "{} / {}: {}", targets[i].spec->id, targets[i].kernel->spec.label(), outcomes[i].error);
        out.push_back({targets[i].spec->id, targets[i].kernel->spec.label(), outcomes[i].samples_s, outcomes[i].instructions});
    }
    return out;
}

Result<std::vector<LabelledSamples>> time_plan(const Suite &suite, const Plan &plan, Backends &backends,
                                               const TimingRequest &timing) {
    PlanTimer timer(suite, plan, backends);
    std::vector<size_t> all(timer.size());
    std::iota(all.begin(), all.end(), size_t{0});
    return timer.time(timing, all);
}

Result<CostInputs> load_cost_inputs(Store &store, const std::string &device_class) {
    CostInputs c;
    c.device_class = device_class;
    auto p = load_pricing(store);
    if (!p) return std::unexpected(p.error());
    if (!*p) {
        c.no_pricing = fmt::format("not priced: {} does not exist", store.where(kPricingKey));
        return c;
    }
    if (!(*p)->find(device_class))
        return fail(ErrorKind::Usage, "--device-class {}: not a device class of {}", device_class, (*p)->file.string());
    c.pricing = std::move(**p);
    auto workloads = load_workloads(store);
    if (!workloads) return std::unexpected(workloads.error());
    c.workloads = std::move(*workloads);
    return c;
}

Result<void> add_workloads(RunResults &results, const std::vector<Workload> &workloads, const Pricing &pricing,
                           const std::string &workload_kernel, bool strict) {
    for (Workload w : workloads) {
        // Any kernel can be projected: the one the workload names, or the run's choice.
        if (!workload_kernel.empty()) w.kernel = workload_kernel;
        std::map<std::string, double> now, then, leaks, ratio_low;
        bool memory = false;
        for (const auto &r : results.results) {
            if (r.kernel != w.kernel) continue;
            for (const auto &c : r.checks) {
                if (c.check == "perf") {
                    if (const auto *m = c.metrics.if_contains("median_s"); m && m->is_number()) now[r.case_id] = m->to_number<double>();
                    // The baseline's median as the perf check compared it: the same in a run and a merge.
                    if (const auto *b = c.metrics.if_contains("baseline_median_s"); b && b->is_number()) then[r.case_id] = b->to_number<double>();
                    const auto *status = c.metrics.if_contains("status");
                    const auto *low = c.metrics.if_contains("ci_low");
                    if (status && status->is_string() && status->get_string() != "too_noisy" && low && low->is_number())
                        ratio_low[r.case_id] = low->to_number<double>();
                }
                if (c.check == "memory")
                    if (const auto *l = c.metrics.if_contains("leak_bytes_per_call"); l && l->is_number()) {
                        leaks[r.case_id] = l->to_number<double>();
                        memory = true;
                    }
            }
        }
        const DevicePrice *price = pricing.find(w.device_class);
        if (!price) return fail(ErrorKind::BadInput, "{}: $.device_class: \"{}\" is not priced in {}", w.file.string(), w.device_class, pricing.file.string());
        results.workloads.push_back(workload_result(w, now, then, ratio_low, memory ? &leaks : nullptr, *price, strict));
    }
    return {};
}

}  // namespace attngate
