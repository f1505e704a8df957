// Merging shards and redoing the run-wide perf correction.
#include "run/merge.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "checks/perf_check.hpp"
#include "results/fingerprint.hpp"
#include "stats/perf_decision.hpp"

namespace attngate {

namespace {

std::vector<std::string> strings(const json::object &o, std::string_view key) {
    std::vector<std::string> out;
    if (const auto *a = o.if_contains(key); a && a->is_array())
        for (const auto &v : a->get_array())
            if (v.is_string()) out.emplace_back(v.get_string());
    return out;
}

std::string field(const json::object &o, std::string_view key) {
    const auto *v = o.if_contains(key);
    return v ? (v->is_string() ? std::string(v->get_string()) : json::serialize(*v)) : "";
}

/// What moved between two shards' fingerprints. A/B shards may run on machines of another
/// CPU or kernel (each decides its pairs on one machine), so those do not count for them.
std::vector<FingerprintChange> shard_fingerprint_diff(const RunResults &first, const RunResults &r) {
    auto diff = diff_fingerprints(first.fingerprint, r.fingerprint);
    if (!r.ab.empty())
        std::erase_if(diff, [](const FingerprintChange &c) { return c.key.starts_with("cpu.") || c.key.starts_with("os."); });
    return diff;
}

/// A row's unit of the shard plan: its case, or its case/kernel.
std::string unit_of(const CaseResult &c, const std::string &unit) { return unit == "case" ? c.case_id : c.case_id + "/" + c.kernel; }

/// What each shard holds against what it planned: a shard that did not finish, a unit of its
/// plan without a row, or a row that another shard (or the same one) holds too is bad input
/// naming the file: merged, each would pass as a row that was never gated or a row kept twice.
Result<void> check_rows(const std::vector<std::pair<std::string, RunResults>> &shards, const std::string &unit) {
    std::map<std::string, std::string> holder;  // case/kernel -> file
    for (const auto &[file, r] : shards) {
        if (!r.complete)
            return fail(ErrorKind::BadInput, "{}: $.complete is false: the shard did not finish ({} row(s) written); run it again", file,
                        r.results.size());
        std::set<std::string> units;
        for (const auto &c : r.results) {
            if (auto [it, fresh] = holder.emplace(c.case_id + "/" + c.kernel, file); !fresh)
                return fail(ErrorKind::BadInput, "{}: row {} is in {} too: a row given twice", file, it->first, it->second);
            units.insert(unit_of(c, unit));
        }
        for (const auto &u : strings(r.shard, "mine"))
            if (!units.contains(u)) return fail(ErrorKind::BadInput, "{}: $.shard.mine plans {}, but the shard holds no row of it", file, u);
    }
    return {};
}

/// Whether a shard planned nothing: its kernel sources did not load, so its load errors fail
/// the merge, and what it would have run is unknown (the others are not checked for covering
/// it). Results that are not a shard's, a shard's index or count that is no whole number in
/// order, or a shard without a plan or load errors, are bad input.
Result<bool> any_planless(const std::vector<std::pair<std::string, RunResults>> &shards) {
    bool planless = false;
    for (const auto &[file, r] : shards) {
        if (r.shard.empty()) return fail(ErrorKind::BadInput, "{}: $.shard: not the results of a shard (run with --shard I/N)", file);
        const auto *index = r.shard.if_contains("index"), *count = r.shard.if_contains("count");
        if (!index || !index->is_int64() || !count || !count->is_int64() || index->as_int64() < 1 || index->as_int64() > count->as_int64())
            return fail(ErrorKind::BadInput, "{}: $.shard: index and count must be whole numbers with 1 <= index <= count", file);
        if (!r.shard.contains("plan") && r.load_errors.empty()) return fail(ErrorKind::BadInput, "{}: $.shard.plan: missing", file);
        planless = planless || !r.shard.contains("plan");
    }
    return planless;
}

}  // namespace

Result<RunResults> merge_shards(std::vector<std::pair<std::string, RunResults>> shards, const MergeOptions &o) {
    if (shards.empty()) return fail(ErrorKind::Usage, "merge: no shard results given");
    const auto planless = any_planless(shards);
    if (!planless) return std::unexpected(planless.error());
    const auto planned = std::find_if(shards.begin(), shards.end(), [](const auto &s) { return s.second.shard.contains("plan"); });
    const auto &[first_file, first] = planned == shards.end() ? shards.front() : *planned;
    const std::string count = field(first.shard, "count"), unit = field(first.shard, "unit");
    const std::vector<std::string> plan = strings(first.shard, "plan");
    std::map<int, std::string> seen;  // shard index -> file
    for (const auto &[file, r] : shards) {
        if (r.suite != first.suite)
            return fail(ErrorKind::BadInput, "{}: suite \"{}\", but {} is suite \"{}\": shards of different suites do not merge", file, r.suite,
                        first_file, first.suite);
        if (field(r.shard, "count") != count || field(r.shard, "unit") != unit)
            return fail(ErrorKind::BadInput, "{}: $.shard: shard {} of {} ({}), but {} is of {} ({})", file, field(r.shard, "index"),
                        field(r.shard, "count"), field(r.shard, "unit"), first_file, count, unit);
        const int index = static_cast<int>(r.shard.at("index").to_number<int64_t>());
        if (auto [it, fresh] = seen.emplace(index, file); !fresh)
            return fail(ErrorKind::BadInput, "{} and {} are both shard {} of {}", it->second, file, index, count);
        if (o.force || !r.shard.contains("plan")) continue;
        if (field(r.shard, "seed") != field(first.shard, "seed"))
            return fail(ErrorKind::BadInput, "{}: suite seed {}, but {} has seed {} (pass --force to merge anyway)", file, field(r.shard, "seed"),
                        first_file, field(first.shard, "seed"));
        if (strings(r.shard, "plan") != plan)
            return fail(ErrorKind::BadInput, "{}: planned other runs than {} (another suite version, filter or store?) (pass --force to merge anyway)",
                        file, first_file);
        if (const auto diff = shard_fingerprint_diff(first, r); !diff.empty()) {
            std::string what;
            for (size_t i = 0; i < diff.size() && i < 3; ++i) what += (i ? "; " : "") + describe_change(diff[i]);
            return fail(ErrorKind::BadInput, "{}: fingerprint differs from {}'s ({}{}) (pass --force to merge anyway)", file, first_file, what,
                        diff.size() > 3 ? fmt::format("; and {} more", diff.size() - 3) : "");
        }
    }
    const int n = std::stoi(count);
    std::string missing;
    for (int i = 1; i <= n; ++i)
        if (!seen.contains(i)) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", i);
    if (!missing.empty()) return fail(ErrorKind::BadInput, "merge: missing shard(s) {} of {} (have {} file(s))", missing, n, shards.size());

    std::map<std::string, std::string> owner;  // unit -> file
    for (const auto &[file, r] : shards)
        for (const auto &u : strings(r.shard, "mine"))
            if (auto [it, fresh] = owner.emplace(u, file); !fresh)
                return fail(ErrorKind::BadInput, "{} and {} both ran {}", it->second, file, u);
    if (auto rows = check_rows(shards, unit); !rows) return std::unexpected(rows.error());
    if (!o.force && !*planless) {
        std::string never;
        for (const auto &u : plan)
            if (!owner.contains(u)) never += (never.empty() ? "" : ", ") + u;
        if (!never.empty()) return fail(ErrorKind::BadInput, "merge: no shard ran {}", never);
    }

    RunResults merged = first;
    merged.results.clear();
    merged.workloads.clear();
    merged.shard = {};
    merged.load_errors.clear();  // every shard's: one that did not load fails the merge, whatever the order
    std::map<std::string, size_t> order;
    for (size_t i = 0; i < plan.size(); ++i) order[plan[i]] = i;
    for (auto &[file, r] : shards) {
        merged.started_at = std::min(merged.started_at, r.started_at);
        if (r.host_name != merged.host_name) merged.host_name.clear();  // shards of several machines: no one host
        for (auto &c : r.results) merged.results.push_back(std::move(c));
        for (auto &e : r.load_errors)
            if (std::find(merged.load_errors.begin(), merged.load_errors.end(), e) == merged.load_errors.end()) merged.load_errors.push_back(e);
    }
    const auto rank = [&](const CaseResult &c) {
        const auto it = order.find(unit_of(c, unit));
        return it == order.end() ? plan.size() : it->second;
    };
    std::stable_sort(merged.results.begin(), merged.results.end(), [&](const CaseResult &a, const CaseResult &b) { return rank(a) < rank(b); });
    const auto *alpha = first.shard.if_contains("alpha");
    redecide_perf(merged, alpha && alpha->is_number() ? alpha->to_number<double>() : DecisionPolicy{}.alpha);
    return merged;
}

size_t redecide_perf(RunResults &results, double alpha) {
    std::vector<CheckResult *> checks;
    std::vector<PerfDecision> decisions;
    std::vector<DecisionPolicy> policies;
    std::vector<bool> calibrated;        // the check compared calibrated times
    std::vector<bool> against_baseline;  // not a paired A/B row
    double bh_alpha = alpha;
    for (auto &r : results.results)
        for (auto &c : r.checks) {
            const PerfMetrics *m = c.get<PerfMetrics>();
            if (!m) continue;
            const auto [cur, base] = samples_to_gate(*m);
            if (cur.empty() || base.empty()) continue;  // not compared: no baseline, another machine, or not timed
            DecisionPolicy policy;
            policy.alpha = alpha;
            if (m->threshold_pct && std::isfinite(*m->threshold_pct)) policy.threshold = *m->threshold_pct / 100.0;
            const bool paired = m->mode == PerfMode::Ab;
            if (m->looks) {  // as run_ab decided
                // A look count from the file, bounded before the cast.
                policy = per_look(policy, static_cast<int>(std::clamp<int64_t>(*m->looks, 1, 1000)));
                bh_alpha = std::min(bh_alpha, policy.alpha);
            }
            decisions.push_back(paired ? decide_paired(cur, base, policy) : decide(cur, base, policy));
            policies.push_back(policy);
            checks.push_back(&c);
            calibrated.push_back(m->mode == PerfMode::Calibrated);
            against_baseline.push_back(!paired);
        }
    apply_benjamini_hochberg(decisions, bh_alpha);
    for (size_t i = 0; i < checks.size(); ++i) {  // as the perf phase: the guard, then a regression must reproduce
        const PerfMetrics &m = checks[i]->as<PerfMetrics>();
        guard_machine_speed(decisions[i], machine_move_of(m), calibrated[i]);
        if (against_baseline[i] && decisions[i].status == PerfStatus::Regression) {
            const auto [cur, base] = samples_to_gate(m, PerfTiming::Reproduction);
            PerfDecision again;  // Insufficient
            again.reason = "none was recorded (results written before regressions were timed twice, or the second timing failed)";
            if (!cur.empty()) {
                again = decide(cur, base, policies[i]);
                guard_machine_speed(again, machine_move_of(m, PerfTiming::Reproduction), calibrated[i]);
            }
            require_reproduction(decisions[i], again);
        }
        apply_perf_decision(*checks[i], decisions[i]);
        keep_reproduction_error(*checks[i]);
    }
    return checks.size();
}

}  // namespace attngate
