// Counting instructions instead of timing, and judging the counts.
#include "run/instruction_phase.hpp"

#include <map>

#include "backend/instruction_count.hpp"
#include "checks/instructions_check.hpp"
#include "store/baseline_store.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// What the counting child gave: a count per (case id, kernel label), or why none.
struct Counted {
    std::map<std::pair<std::string, std::string>, double> counts;
    std::string unavailable;  ///< counting cannot run on this machine
    std::string error;        ///< the counting child failed
};

bool in_process(const PerfTarget &t, Backends &backends) { return backends.host_of(t.kernel->spec.kernel)->name() == "in-process"; }

/// The check of one target, given the counts (or why there are none).
CheckResult instructions_of(const Suite &suite, const PerfTarget &t, Backends &backends, const Counted &counted,
                            const BaselineFile *baselines, const PerfPhaseOptions &o) {
    const std::string label = t.label();
    if (!counted.unavailable.empty()) return CheckResult(CheckName::Instructions, Verdict::Skip, counted.unavailable);
    if (!in_process(t, backends))
        return CheckResult(CheckName::Instructions, Verdict::Skip,
                           fmt::format("not counted: instructions are counted in-process only, and {} runs in {}", label,
                                       backends.host_of(t.kernel->spec.kernel)->name()));
    if (!counted.error.empty()) return CheckResult(CheckName::Instructions, Verdict::Error, counted.error);
    const auto it = counted.counts.find({t.spec->id, label});
    if (it == counted.counts.end())
        return CheckResult(CheckName::Instructions, Verdict::Error, "the counting child reported no count for this case x kernel");
    const auto *base = baselines ? baselines->values_of<InstructionsBaseline>(t.spec->id, label) : nullptr;
    const std::string note = fmt::format(
        "no instructions baseline for {} / {} on machine class \"{}\" (record one: attngate baseline update --checks instructions)",
        t.spec->id, label, o.machine_class);
    return instructions_check(it->second, base ? base->instructions : std::nullopt,
                              t.spec->perf_threshold_pct.value_or(suite.perf.threshold_pct), o.machine_class, note, o.choices.strict);
}

}  // namespace

Result<void> instruction_phase(const Suite &suite, const std::vector<PerfTarget> &targets, Backends &backends, RunResults &results,
                               const PerfPhaseOptions &o) {
    auto key = baseline_key(CheckName::Instructions, suite.name, o.machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(*o.store, *key);
    if (!file) return std::unexpected(file.error());
    Counted counted;
    counted.unavailable = instruction_counting_unavailable();
    CountRequest request{suite.file, o.choices.plugins, {}, o.timeout_s};
    for (const auto &t : targets)
        if (in_process(t, backends)) request.labels.emplace_back(t.spec->id, t.label());
    if (counted.unavailable.empty() && !request.labels.empty()) {
        auto c = count_under_callgrind(request);
        if (c) counted.counts = std::move(*c);
        else counted.error = c.error().message;
    }
    for (const auto &t : targets) {
        CaseResult &r = results.results[t.result_index];
        if (o.cost) r.checks.emplace_back(CheckName::Cost, Verdict::Skip, "not priced: --perf-metric instructions measures no time");
        r.checks.push_back(instructions_of(suite, t, backends, counted, *file ? &**file : nullptr, o));
    }
    return {};
}

}  // namespace attngate
