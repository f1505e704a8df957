// The cost check: what a kernel's measured speed costs at a device's list price, per
// case x kernel (per million tokens) and per production workload (a monthly projection
// against the baseline's, and how long a leak lets the service live).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "checks/cost.hpp"
#include "results/results.hpp"

namespace attngate {

/// Per case x kernel: cost per million query tokens now and at the baseline's speed. It is the
/// row's time priced, so it is gated exactly when that time was: it takes the perf check's
/// verdict (a row whose time was not gated is not gated here either, never passed); the
/// gate on a budget is per workload.
CheckResult cost_check(const CheckResult &perf, double median_s, std::optional<double> baseline_median_s, double tokens_per_call,
                       const DevicePrice &price);

/// Per workload: the projection at the current and baseline medians (seconds per call by
/// case, for the workload's kernel) and the leak survival from the memory check's leak
/// rates (nullptr when memory was not measured). The entry carries a verdict and reason.
///
/// The cost gate only fails on a rise it can stand behind: the monthly cost at the lower
/// end of each shape's bootstrap CI of the time ratio (ci_low, from the perf check) must
/// exceed the budget. A shape without a confident ratio (too noisy) makes the workload
/// "too noisy to gate", never a pass or a fail on noise; with `strict` that fails too.
WorkloadResult workload_result(const Workload &w, const std::map<std::string, double> &current_s,
                               const std::map<std::string, double> &baseline_s,
                               const std::map<std::string, double> &ratio_ci_low,
                               const std::map<std::string, double> *leak_bytes_per_call, const DevicePrice &price,
                               bool strict = false);

}  // namespace attngate
