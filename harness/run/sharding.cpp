// Cost estimates and shard selection.
#include "run/sharding.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "checks/throughput.hpp"
#include "stats/stats.hpp"
#include "store/baseline_store.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// A CPU's attention rate when no baseline says better: only the ratios between cases matter.
constexpr double kNominalFlopsPerSecond = 2e9;
/// Forking a child, generating inputs, writing results: per run, whatever the kernel.
constexpr double kOverheadSeconds = 0.02;

template <class T, class U>
bool has(const std::vector<T> &v, const U &x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string label_of(const PlannedCase &pc, const PlannedKernel *k) { return pc.spec->id + "/" + k->spec.label(); }

}  // namespace

std::vector<double> expected_run_seconds(const Suite &suite, const Plan &plan, const std::vector<CheckName> &checks,
                                         const std::map<std::string, double> &perf_median_s) {
    // The baselines' own rate turns FLOPs into seconds for runs they do not cover.
    std::vector<double> rates;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels)
            if (const auto it = perf_median_s.find(label_of(pc, k)); it != perf_median_s.end() && it->second > 0)
                rates.push_back(attention_flops(attention_shape(*pc.spec)) / it->second);
    const double rate = rates.empty() ? kNominalFlopsPerSecond : median(rates);
    std::vector<double> out;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels) {
            const auto it = perf_median_s.find(label_of(pc, k));
            const double t = it != perf_median_s.end() ? it->second : attention_flops(attention_shape(*pc.spec)) / rate;
            double calls = 0, timed = 0;
            if (has(checks, CheckName::Golden)) calls += 1;
            if (has(checks, CheckName::Memory)) calls += suite.warmup_calls + static_cast<double>(pc.spec->memory_calls.value_or(suite.memory_calls)) + 4;
            if (has(checks, CheckName::Perf) || has(checks, CheckName::Cost)) timed = suite.perf.repetitions * std::max(suite.perf.min_time_s, t) + t;
            out.push_back(kOverheadSeconds + calls * t + timed);
        }
    return out;
}

Result<json::object> shard_plan(Plan &plan, const Suite &suite, const ShardSpec &shard, ShardUnit unit, Store &store,
                                const std::string &machine_class, const std::vector<CheckName> &checks, double alpha) {
    std::map<std::string, double> medians;
    std::string balanced_by = "FLOP estimate";
    auto key = baseline_key(CheckName::Perf, suite.name, machine_class);
    if (!key) return std::unexpected(key.error());
    auto base = load_baseline_file(store, *key);
    if (!base) return std::unexpected(base.error());
    if (*base) {
        for (const auto &e : (*base)->entries)
            if (const auto *kept = e.get<PerfBaseline>(); kept && kept->median_s && std::isfinite(*kept->median_s))
                medians[e.case_id + "/" + e.kernel] = *kept->median_s;
        if (!medians.empty()) balanced_by = "perf baselines of " + machine_class;
    }
    const std::vector<double> run_cost = expected_run_seconds(suite, plan, checks, medians);

    // Units in plan order with their cost.
    std::vector<std::string> units;
    std::vector<double> unit_cost;
    size_t i = 0;
    for (const auto &pc : plan.cases)
        for (const PlannedKernel *k : pc.kernels) {
            const std::string label = unit == ShardUnit::Case ? pc.spec->id : label_of(pc, k);
            if (units.empty() || units.back() != label) units.push_back(label), unit_cost.push_back(0.0);
            unit_cost.back() += run_cost[i++];
        }
    const std::vector<int> owner = balanced_partition(unit_cost, shard.count);
    json::array all, mine;
    double my_cost = 0.0, total = 0.0;
    std::vector<std::string> kept;
    for (size_t u = 0; u < units.size(); ++u) {
        all.push_back(json::string(units[u]));
        total += unit_cost[u];
        if (owner[u] == shard.index - 1) mine.push_back(json::string(units[u])), kept.push_back(units[u]), my_cost += unit_cost[u];
    }
    for (auto &pc : plan.cases)
        std::erase_if(pc.kernels, [&](const PlannedKernel *k) {
            return !has(kept, unit == ShardUnit::Case ? pc.spec->id : label_of(pc, k));
        });
    std::erase_if(plan.cases, [](const PlannedCase &pc) { return pc.kernels.empty(); });
    json::object out = unplanned_shard(shard, unit);
    out["plan"] = std::move(all);
    out["mine"] = std::move(mine);
    out["balanced_by"] = balanced_by;
    out["expected_s"] = my_cost;
    out["expected_total_s"] = total;
    out["seed"] = suite.seed;
    out["alpha"] = alpha;
    return out;
}

json::object unplanned_shard(const ShardSpec &shard, ShardUnit unit) {
    return json::object{{"index", shard.index}, {"count", shard.count}, {"unit", unit == ShardUnit::Case ? "case" : "case/kernel"}};
}

}  // namespace attngate
