// Perf check verdicts and metrics.
#include "checks/perf_check.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "stats/stats.hpp"

namespace attngate {

namespace {
json::value number_or_null(double x) { return std::isfinite(x) ? json::value(x) : json::value(nullptr); }

/// A case the rule could not gate: a skip, or in strict mode a failure that says why.
CheckResult ungated(CheckResult r, bool strict) {
    r.verdict = strict ? Verdict::Fail : Verdict::Skip;
    if (strict) r.reason = "ungated in strict mode: " + r.reason;
    return r;
}
}  // namespace

json::object timing_metrics(const std::vector<double> &samples_s, const AttentionShape &shape, double flops) {
    const double med = median(samples_s);
    return json::object{{"samples_s", json::array(samples_s.begin(), samples_s.end())},
                        {"repetitions", samples_s.size()},
                        {"median_s", number_or_null(med)},
                        {"mad_s", number_or_null(mad_scaled(samples_s))},
                        {"tokens_per_s", number_or_null(tokens_per_second(shape, med))},
                        {"flops", flops},
                        {"gflops", number_or_null(gflops_per_second(flops, med))}};
}

void apply_perf_decision(CheckResult &r, const PerfDecision &d) {
    r.metrics["ratio"] = number_or_null(d.ratio);
    r.metrics["ci_low"] = number_or_null(d.ci_low);
    r.metrics["ci_high"] = number_or_null(d.ci_high);
    r.metrics["ci_level"] = d.ci_level;
    r.metrics["p_value"] = number_or_null(d.p_value);
    r.metrics["p_adjusted"] = number_or_null(d.p_adjusted);
    r.metrics["relative_noise"] = number_or_null(d.relative_noise);
    r.metrics["required_repetitions"] = d.required_repetitions;
    const char *status = d.status == PerfStatus::TooNoisy || d.status == PerfStatus::Insufficient ? "too_noisy" : perf_status_name(d.status);
    r.metrics["status"] = status;
    r.reason = d.reason;
    switch (d.status) {
    case PerfStatus::Regression: r.verdict = Verdict::Fail; break;
    case PerfStatus::Ok:
    case PerfStatus::Improvement: r.verdict = Verdict::Pass; break;
    case PerfStatus::TooNoisy:
    case PerfStatus::Insufficient: {
        // Read before the move: argument order is unspecified (clang moved r out first).
        const bool strict = r.metrics.contains("strict");
        r = ungated(std::move(r), strict);  // reported, never a silent pass
    }
    }
}

CheckResult perf_check(const std::vector<double> &samples_s, const std::vector<double> &baseline_s,
                       const PerfDecision *decision, PerfBaselineState state, const std::string &baseline_note,
                       const AttentionShape &shape, double flops, double threshold_pct, const std::string &machine_class,
                       bool strict) {
    CheckResult r;
    r.check = "perf";
    r.metrics = timing_metrics(samples_s, shape, flops);
    r.metrics["machine_class"] = machine_class;
    r.metrics["threshold_pct"] = threshold_pct;
    if (strict) r.metrics["strict"] = true;
    if (state != PerfBaselineState::Present || !decision) {
        r.metrics["status"] = state == PerfBaselineState::OtherMachine ? "other_machine" : "no_baseline";
        r.reason = baseline_note;
        return ungated(std::move(r), strict);
    }
    const double base_median = median(baseline_s);
    r.metrics["baseline_samples_s"] = json::array(baseline_s.begin(), baseline_s.end());
    r.metrics["baseline_median_s"] = number_or_null(base_median);
    apply_perf_decision(r, *decision);
    return r;
}

namespace {
std::vector<double> numbers_at(const json::object &m, const char *key) {
    std::vector<double> out;
    if (const auto *v = m.if_contains(key); v && v->is_array())
        for (const auto &x : v->get_array())
            if (x.is_number()) out.push_back(x.to_number<double>());
    return out;
}

double ratio_of_medians(const std::vector<double> &now, const std::vector<double> &then) {
    if (now.empty() || then.empty()) return std::numeric_limits<double>::quiet_NaN();
    return median(now) / median(then);
}
}  // namespace

MachineMove PerfCalibration::machine_move() const {
    return {ratio_of_medians(samples_s, baseline_samples_s), ratio_of_medians(parallel_samples_s, baseline_parallel_samples_s)};
}

void add_calibration(CheckResult &r, const PerfCalibration &c) {
    if (r.metrics.contains("baseline_samples_s")) r.metrics["mode"] = c.gated ? "calibrated" : "absolute";
    if (!c.note.empty()) r.notes.push_back(c.note);
    if (c.samples_s.empty()) return;
    r.metrics["calibration_workload"] = c.workload;
    r.metrics["calibration_s"] = json::array(c.samples_s.begin(), c.samples_s.end());
    if (!c.parallel_samples_s.empty())
        r.metrics["parallel_calibration_s"] = json::array(c.parallel_samples_s.begin(), c.parallel_samples_s.end());
    if (c.baseline_samples_s.empty()) return;
    const MachineMove move = c.machine_move();
    r.metrics["baseline_calibration_s"] = json::array(c.baseline_samples_s.begin(), c.baseline_samples_s.end());
    r.metrics["calibration_ratio"] = number_or_null(move.single);
    if (std::isfinite(move.parallel)) {
        r.metrics["baseline_parallel_calibration_s"] =
            json::array(c.baseline_parallel_samples_s.begin(), c.baseline_parallel_samples_s.end());
        r.metrics["parallel_calibration_ratio"] = move.parallel;
    }
    const auto *now = r.metrics.if_contains("median_s");
    const auto *then = r.metrics.if_contains("baseline_median_s");
    if (now && then && now->is_number() && then->is_number())
        r.metrics["absolute_ratio"] = number_or_null(now->to_number<double>() / then->to_number<double>());
}

std::pair<std::vector<double>, std::vector<double>> samples_to_gate(const json::object &m, std::string_view timing) {
    const std::string at(timing);
    auto cur = numbers_at(m, (at + "samples_s").c_str()), base = numbers_at(m, "baseline_samples_s");
    const auto *mode = m.if_contains("mode");
    if (mode && mode->is_string() && mode->get_string() == "calibrated")
        return {relative_to_calibration(cur, numbers_at(m, (at + "calibration_s").c_str())),
                relative_to_calibration(base, numbers_at(m, "baseline_calibration_s"))};
    return {std::move(cur), std::move(base)};
}

MachineMove machine_move_of(const json::object &m, std::string_view timing) {
    const std::string at(timing);
    return {ratio_of_medians(numbers_at(m, (at + "calibration_s").c_str()), numbers_at(m, "baseline_calibration_s")),
            ratio_of_medians(numbers_at(m, (at + "parallel_calibration_s").c_str()),
                             numbers_at(m, "baseline_parallel_calibration_s"))};
}

void add_reproduction(CheckResult &r, const std::vector<double> &samples_s, const PerfCalibration &c, const PerfDecision &d,
                      const std::string &error) {
    const auto array = [](const std::vector<double> &v) { return json::array(v.begin(), v.end()); };
    r.metrics["reproduction_samples_s"] = array(samples_s);
    if (!c.samples_s.empty()) r.metrics["reproduction_calibration_s"] = array(c.samples_s);
    if (!c.parallel_samples_s.empty()) r.metrics["reproduction_parallel_calibration_s"] = array(c.parallel_samples_s);
    r.metrics["reproduction_ratio"] = number_or_null(d.ratio);
    r.metrics["reproduction_ci_low"] = number_or_null(d.ci_low);
    r.metrics["reproduction_ci_high"] = number_or_null(d.ci_high);
    r.metrics["reproduction_status"] = perf_status_name(d.status);
    if (!error.empty()) r.metrics["reproduction_error"] = error;
    keep_reproduction_error(r);
}

void keep_reproduction_error(CheckResult &r) {
    const auto *e = r.metrics.if_contains("reproduction_error");
    if (!e || !e->is_string()) return;
    r.verdict = Verdict::Error;  // the kernel did not run to a time, as when a first timing fails
    r.reason = "the second timing of a regression failed: " + std::string(e->get_string());
}

}  // namespace attngate
