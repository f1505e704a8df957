// Perf baselines of a machine class, and each case x kernel's side of a comparison.
#include "run/perf_baselines.hpp"

#include "backend/calibration.hpp"
#include "store/keys.hpp"

namespace attngate {

Result<PerfBaselines> PerfBaselines::load(Store &store, const Suite &suite, const std::string &machine_class) {
    PerfBaselines b;
    b.machine_class_ = machine_class;
    b.untold_threads_ = suite.threads, b.timing_threads_ = suite.timing_threads();
    auto key = baseline_key(CheckName::Perf, suite.name, machine_class);
    if (!key) return std::unexpected(key.error());
    auto file = load_baseline_file(store, *key);
    if (!file) return std::unexpected(file.error());
    b.file_ = std::move(*file);
    if (b.file_) return b;
    auto keys = store.list(baseline_prefix(CheckName::Perf));
    if (!keys) return std::unexpected(keys.error());
    for (const auto &other_key : *keys)
        if (other_key.ends_with("/" + suite.name + ".json"))
            if (auto other = load_baseline_file(store, other_key); other && *other) b.other_machine_ = (*other)->machine_class;
    return b;
}

const PerfBaseline *PerfBaselines::find(const std::string &case_id, const std::string &kernel) const {
    return file_ ? file_->values_of<PerfBaseline>(case_id, kernel) : nullptr;
}

const Seconds &PerfBaselines::samples(const std::string &case_id, const std::string &kernel) const {
    static const Seconds none;
    const PerfBaseline *b = find(case_id, kernel);
    return b && b->samples_s && !other_threads(*b) ? *b->samples_s : none;
}

PerfBaselineState PerfBaselines::state(const std::string &case_id, const std::string &kernel) const {
    if (!samples(case_id, kernel).empty()) return PerfBaselineState::Present;
    return !file_ && other_machine_ ? PerfBaselineState::OtherMachine : PerfBaselineState::Missing;
}

std::string PerfBaselines::missing_note(const std::string &case_id, const std::string &kernel) const {
    if (const PerfBaseline *b = find(case_id, kernel); b && b->samples_s && other_threads(*b))
        return fmt::format("the perf baseline for {} / {} was timed on {} kernel threads, this run on {} (the suite's perf.threads): "
                           "timings not compared; re-record it (attngate baseline update --checks perf)",
                           case_id, kernel, b->threads.value_or(untold_threads_), timing_threads_);
    if (file_) return fmt::format("no perf baseline for {} / {} on machine class \"{}\"", case_id, kernel, machine_class_);
    if (other_machine_)
        return fmt::format("perf baseline was recorded on machine class \"{}\", this is \"{}\": timings not compared", *other_machine_,
                           machine_class_);
    return fmt::format("no perf baseline for machine class \"{}\" (record one: attngate baseline update --checks perf)", machine_class_);
}

PerfCalibration PerfBaselines::calibration(const std::string &case_id, const std::string &kernel, const TimingOutcome &outcome,
                                           bool wanted) const {
    PerfCalibration c;
    c.samples_s = outcome.calibration_s;
    c.parallel_samples_s = outcome.parallel_calibration_s;
    c.workload = kCalibrationWorkload;
    const PerfBaseline *base = file_ ? file_->values_of<PerfBaseline>(case_id, kernel) : nullptr;
    if (!base) return c;
    std::string why_not;
    if (c.samples_s.empty()) {
        why_not = "this kernel's host timed no calibration workload (a remote adapter): gated on absolute time";
    } else {
        c.baseline_samples_s = base->calibration_s.value_or(Seconds{});
        c.baseline_parallel_samples_s = base->parallel_calibration_s.value_or(Seconds{});
        const std::string base_workload = base->calibration_workload.value_or("");
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

}  // namespace attngate
