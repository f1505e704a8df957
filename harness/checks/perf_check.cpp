// Perf check verdicts and metrics.
#include "checks/perf_check.hpp"

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "stats/stats.hpp"

namespace attngate {

namespace {
/// A case the rule could not gate: a skip, or in strict mode a failure that says why.
void ungated(CheckResult &r, bool strict) {
    r.verdict = strict ? Verdict::Fail : Verdict::Skip;
    if (strict) r.reason = "ungated in strict mode: " + r.reason;
}

PerfCheckStatus check_status(const PerfDecision &d) {
    switch (d.status) {
    case PerfStatus::Ok: return PerfCheckStatus::Ok;
    case PerfStatus::Regression: return PerfCheckStatus::Regression;
    case PerfStatus::Improvement: return PerfCheckStatus::Improvement;
    case PerfStatus::TooNoisy: return d.machine_moved ? PerfCheckStatus::MachineMoved : PerfCheckStatus::TooNoisy;
    case PerfStatus::Insufficient: return d.collecting ? PerfCheckStatus::Collecting : PerfCheckStatus::TooNoisy;
    }
    return PerfCheckStatus::TooNoisy;
}

double ratio_of_medians(const std::vector<double> &now, const std::vector<double> &then) {
    if (now.empty() || then.empty()) return std::numeric_limits<double>::quiet_NaN();
    return median(now) / median(then);
}

bool finite(const std::optional<double> &x) { return x && std::isfinite(*x); }
}  // namespace

PerfMetrics timing_metrics(const std::vector<double> &samples_s, const AttentionShape &shape, double flops) {
    const double med = median(samples_s);
    PerfMetrics m;
    m.samples_s = samples_s;
    m.repetitions = static_cast<int64_t>(samples_s.size());
    m.median_s = med;
    m.mad_s = mad_scaled(samples_s);
    m.tokens_per_s = tokens_per_second(shape, med);
    m.flops = flops;
    m.gflops = gflops_per_second(flops, med);
    return m;
}

void apply_perf_decision(CheckResult &r, const PerfDecision &d) {
    PerfMetrics &m = r.as<PerfMetrics>();
    m.ratio = d.ratio, m.ci_low = d.ci_low, m.ci_high = d.ci_high, m.ci_level = d.ci_level;
    m.p_value = d.p_value, m.p_adjusted = d.p_adjusted;
    m.relative_noise = d.relative_noise;
    m.required_repetitions = d.required_repetitions;
    m.status = check_status(d);
    r.reason = d.reason;
    switch (d.status) {
    case PerfStatus::Regression: r.verdict = Verdict::Fail; break;
    case PerfStatus::Ok: r.verdict = Verdict::Pass; break;
    case PerfStatus::Improvement:
        if (m.mode == PerfMode::Ab) {
            r.verdict = Verdict::Pass;
            break;
        }
        m.status = PerfCheckStatus::StaleBaseline;  // an old baseline cannot catch today's regression
        r.reason = fmt::format("not gated: stale baseline? {}; accept today's times with `attngate baseline update --checks perf`", d.reason);
        ungated(r, m.strict.value_or(false));
        break;
    case PerfStatus::TooNoisy:
    case PerfStatus::Insufficient: ungated(r, m.strict.value_or(false));  // reported, never a silent pass
    }
}

CheckResult perf_check(const PerfCheckInput &in) {
    CheckResult r(timing_metrics(in.samples_s, in.shape, in.flops));
    PerfMetrics &m = r.as<PerfMetrics>();
    m.machine_class = in.machine_class;
    m.threshold_pct = in.threshold_pct;
    if (in.threads) m.threads = *in.threads;
    if (in.strict) m.strict = true;
    if (in.baseline != PerfBaselineState::Present || !in.decision) {
        m.status = in.baseline == PerfBaselineState::OtherMachine ? PerfCheckStatus::OtherMachine : PerfCheckStatus::NoBaseline;
        r.reason = in.baseline_note;
        ungated(r, in.strict);
        return r;
    }
    if (!in.baseline_samples_s.empty()) {
        m.baseline_samples_s = in.baseline_samples_s;
        m.baseline_median_s = median(in.baseline_samples_s);
    }
    if (in.paired) m.mode = PerfMode::Ab;
    apply_perf_decision(r, *in.decision);
    return r;
}

void add_window(CheckResult &r, const std::vector<double> &window, double shift) {
    PerfMetrics &m = r.as<PerfMetrics>();
    m.mode = PerfMode::Window;
    m.window_runs = static_cast<int64_t>(window.size());
    if (window.size() >= 2) m.window_spread_pct = 100.0 * stddev(window);
    m.run_shift = std::exp(shift);
    if (m.samples_s) m.fastest_s = fastest(*m.samples_s);
    // The window's mean in this run's seconds: its calibrated time at today's calibration, shifted.
    if (!window.empty() && m.calibration_s && !m.calibration_s->empty())
        m.window_fastest_s = std::exp(mean(window) + shift) * fastest(*m.calibration_s);
    if (m.status == PerfCheckStatus::Regression)  // history_record.hpp, "x"
        r.reason += "; this time stays out of the row's window, so the row stays red until `attngate baseline update "
                    "--checks perf` accepts it as the new level";
}

std::optional<double> priced_baseline_s(const PerfMetrics &m) {
    if (m.mode == PerfMode::Window) {
        if (finite(m.median_s) && finite(m.window_fastest_s) && finite(m.fastest_s) && *m.fastest_s > 0)
            return *m.median_s * *m.window_fastest_s / *m.fastest_s;
        return std::nullopt;
    }
    return m.baseline_median_s;
}

MachineMove PerfCalibration::machine_move() const {
    return {ratio_of_medians(samples_s, baseline_samples_s), ratio_of_medians(parallel_samples_s, baseline_parallel_samples_s)};
}

void add_calibration(CheckResult &r, const PerfCalibration &c) {
    PerfMetrics &m = r.as<PerfMetrics>();
    if (m.baseline_samples_s) m.mode = c.gated ? PerfMode::Calibrated : PerfMode::Absolute;
    if (!c.note.empty()) r.notes.push_back(c.note);
    if (c.samples_s.empty()) return;
    m.calibration_workload = c.workload;
    m.calibration_s = c.samples_s;
    if (!c.parallel_samples_s.empty()) m.parallel_calibration_s = c.parallel_samples_s;
    if (c.baseline_samples_s.empty()) return;
    const MachineMove move = c.machine_move();
    m.baseline_calibration_s = c.baseline_samples_s;
    m.calibration_ratio = move.single;
    if (std::isfinite(move.parallel)) {
        m.baseline_parallel_calibration_s = c.baseline_parallel_samples_s;
        m.parallel_calibration_ratio = move.parallel;
    }
    if (finite(m.median_s) && finite(m.baseline_median_s)) m.absolute_ratio = *m.median_s / *m.baseline_median_s;
}

namespace {
const std::vector<double> &or_none(const std::optional<Seconds> &s) {
    static const Seconds none;
    return s ? *s : none;
}

/// The samples and calibration samples (one thread, parallel) of one timing.
struct TimingSamples {
    const Seconds &samples, &calibration, &parallel_calibration;
};

TimingSamples timing_of(const PerfMetrics &m, PerfTiming t) {
    if (t == PerfTiming::Reproduction)
        return {or_none(m.reproduction_samples_s), or_none(m.reproduction_calibration_s), or_none(m.reproduction_parallel_calibration_s)};
    return {or_none(m.samples_s), or_none(m.calibration_s), or_none(m.parallel_calibration_s)};
}
}  // namespace

std::pair<std::vector<double>, std::vector<double>> samples_to_gate(const PerfMetrics &m, PerfTiming timing) {
    const TimingSamples now = timing_of(m, timing);
    const Seconds &base = or_none(m.baseline_samples_s);
    if (m.mode == PerfMode::Calibrated)
        return {relative_to_calibration(now.samples, now.calibration), relative_to_calibration(base, or_none(m.baseline_calibration_s))};
    return {now.samples, base};
}

MachineMove machine_move_of(const PerfMetrics &m, PerfTiming timing) {
    const TimingSamples now = timing_of(m, timing);
    return {ratio_of_medians(now.calibration, or_none(m.baseline_calibration_s)),
            ratio_of_medians(now.parallel_calibration, or_none(m.baseline_parallel_calibration_s))};
}

void add_reproduction(CheckResult &r, const std::vector<double> &samples_s, const PerfCalibration &c, const PerfDecision &d,
                      const std::string &error) {
    PerfMetrics &m = r.as<PerfMetrics>();
    m.reproduction_samples_s = samples_s;
    if (!c.samples_s.empty()) m.reproduction_calibration_s = c.samples_s;
    if (!c.parallel_samples_s.empty()) m.reproduction_parallel_calibration_s = c.parallel_samples_s;
    m.reproduction_ratio = d.ratio, m.reproduction_ci_low = d.ci_low, m.reproduction_ci_high = d.ci_high;
    m.reproduction_status = d.status;
    if (!error.empty()) m.reproduction_error = error;
    keep_reproduction_error(r);
}

void keep_reproduction_error(CheckResult &r) {
    const PerfMetrics &m = r.as<PerfMetrics>();
    if (!m.reproduction_error) return;
    r.verdict = Verdict::Error;  // the kernel did not run to a time, as when a first timing fails
    r.reason = "the second timing of a regression failed: " + *m.reproduction_error;
}

}  // namespace attngate
