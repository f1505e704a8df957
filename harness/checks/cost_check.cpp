// Cost check and workload projections.
#include "checks/cost_check.hpp"

#include <cmath>

namespace attngate {

namespace {

/// A workload's entry before it is projected: what, against what budget, at which price.
WorkloadResult unprojected(const Workload &w, const DevicePrice &price) {
    WorkloadResult o;
    o.workload = w.name, o.file = w.file.string(), o.kernel = w.kernel;
    o.budget_pct = w.cost_budget_pct, o.restart_interval_hours = w.restart_interval_hours;
    o.device_class = price.device_class, o.currency = price.currency, o.price_per_hour = price.price_per_hour;
    o.price_source = price.source, o.price_date = price.as_of;
    return o;
}

}  // namespace

CheckResult cost_check(const CheckResult &perf, double median_s, std::optional<double> baseline_median_s, double tokens_per_call,
                       const DevicePrice &price) {
    const double now = cost_per_million_tokens(median_s, tokens_per_call, price.price_per_hour);
    CheckResult r{CostMetrics{now, price.device_class, price.currency, price.price_per_hour, price.source, price.as_of, std::nullopt},
                  perf.verdict};
    if (baseline_median_s) {
        const double then = cost_per_million_tokens(*baseline_median_s, tokens_per_call, price.price_per_hour);
        r.as<CostMetrics>().baseline_usd_per_million_tokens = then;
        r.reason = fmt::format("{:.4g} {} per million tokens (baseline {:.4g}, {:+.1f}%) at {} {:g}/h ({}, {})", now, price.currency,
                               then, 100 * (now / then - 1), price.device_class, price.price_per_hour, price.source, price.as_of);
    } else {
        r.reason = fmt::format("{:.4g} {} per million tokens at {} {:g}/h ({}, {}); no baseline", now, price.currency,
                               price.device_class, price.price_per_hour, price.source, price.as_of);
    }
    if (perf.verdict == Verdict::Skip)
        r.reason += fmt::format("; not gated: the time it is priced from was not ({})", perf.get<PerfMetrics>() ? perf_not_gated_because(perf) : "not timed");
    else if (perf.verdict == Verdict::Fail)
        r.reason += "; the perf check of the time it is priced from failed";
    return r;
}

namespace {

/// Names the workload's shapes that have no confident time ratio, or empty.
std::string unconfident_shapes(const Workload &w, const std::map<std::string, double> &ratio_ci_low) {
    std::string missing;
    for (const auto &s : w.shapes)
        if (!ratio_ci_low.contains(s.case_id)) missing += (missing.empty() ? "" : ", ") + s.case_id;
    return missing;
}

}  // namespace

WorkloadResult workload_result(const Workload &w, const std::map<std::string, double> &current_s,
                               const std::map<std::string, double> &baseline_s,
                               const std::map<std::string, double> &ratio_ci_low,
                               const std::map<std::string, double> *leak_bytes_per_call, const DevicePrice &price,
                               bool strict) {
    WorkloadResult o = unprojected(w, price);
    if (current_s.empty()) {
        o.verdict = Verdict::Skip;
        o.reason = fmt::format("not projected: kernel \"{}\" was not timed in this run (choose the kernel with "
                               "--workload-kernel or the workload's \"kernel\")", w.kernel);
        return o;
    }
    auto current = project_workload(w, current_s, price);
    if (!current) {
        o.verdict = Verdict::Skip;
        o.reason = fmt::format("not projected: {}", current.error().message);
        return o;
    }
    o.monthly_cost = current->monthly_cost;
    o.device_hours_per_month = current->device_hours_per_month;
    std::vector<std::string> failures;
    std::string summary = fmt::format("{:.2f} {}/month", current->monthly_cost, price.currency);
    bool too_noisy = false;
    if (auto base = project_workload(w, baseline_s, price)) {
        const CostChange change = compare_projection(*current, *base, w.cost_budget_pct);
        o.baseline_monthly_cost = base->monthly_cost;
        o.change = change.change;
        o.change_pct = change.change_pct;
        summary = change.reason;
        if (const std::string missing = unconfident_shapes(w, ratio_ci_low); !missing.empty()) {
            too_noisy = true;
            summary = fmt::format("too noisy to gate the cost ({:+.1f}% at the medians): no confident time ratio for {}",
                                  change.change_pct, missing);
        } else {
            std::map<std::string, double> lower_s;
            for (const auto &[case_id, low] : ratio_ci_low)
                if (baseline_s.contains(case_id)) lower_s[case_id] = baseline_s.at(case_id) * low;
            if (auto lower = project_workload(w, lower_s, price)) {
                const CostChange confident = compare_projection(*lower, *base, w.cost_budget_pct);
                o.change_pct_ci_low = confident.change_pct;
                if (!confident.within_budget)
                    failures.push_back(fmt::format("{} (at least {:+.1f}% at the 95% CI's lower end)", change.reason, confident.change_pct));
            }
        }
    } else {
        summary += " (no perf baseline to compare)";
    }
    if (leak_bytes_per_call) {
        if (auto leak = check_leak(w, *leak_bytes_per_call)) {
            o.leak_bytes_per_hour = leak->leak_bytes_per_hour;
            o.leak_survival_hours = leak->survival_hours;
            if (!leak->survives) failures.push_back(leak->reason);
        }
    }
    if (too_noisy && strict && failures.empty()) failures.push_back("ungated in strict mode: " + summary);
    o.verdict = !failures.empty() ? Verdict::Fail : too_noisy ? Verdict::Skip : Verdict::Pass;
    o.reason = failures.empty() ? summary : failures.front();
    return o;
}

}  // namespace attngate
