// What the cost check prices with (pricing and workload profiles from the store), and the
// projection of every workload over a run's results: a run and a merge of shards both
// project over all cases.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checks/cost.hpp"
#include "plan/plan.hpp"
#include "results/results.hpp"
#include "store/store.hpp"

namespace attngate {

/// What the cost check prices with, read and checked before the first case runs: a typo
/// in --device-class or a bad pricing or workloads file costs nothing and writes nothing.
struct CostInputs {
    std::optional<Pricing> pricing;  ///< none: the store has no pricing.json and cost checks skip
    std::string no_pricing;          ///< why there is none, for the skipped cost checks
    std::string device_class;        ///< the pricing entry this machine's time is priced as
    std::vector<Workload> workloads;
};

/// Loads pricing and workloads from the store; an unknown device class is a usage error.
Result<CostInputs> load_cost_inputs(Store &store, const std::string &device_class);

/// Projects every workload profile in the store over `results` (its perf medians, the
/// baselines' medians and ci_low from each perf check, the memory check's leak rates):
/// fills results.workloads. A shipped workload (installed_data_dir()) none of whose cases the
/// run has is left out.
Result<void> add_workloads(RunResults &results, const std::vector<Workload> &workloads, const Pricing &pricing,
                           const std::string &workload_kernel = "", bool strict = false);

/// --workload-kernel (`kernel`; empty: none) must name a kernel of the plan.
Result<void> check_workload_kernel(const std::string &kernel, const Plan &plan);

}  // namespace attngate
