// Shared report vocabulary: the same rows, counts and numbers in every format.
#include "report/summary.hpp"

#include <algorithm>

namespace attngate {

namespace {

/// Per check, the metrics that decide it, in the order a person reads them.
const std::vector<std::string> &decisive_metrics(std::string_view check) {
    static const std::vector<std::string> golden = {"max_abs_error", "tolerance", "margin", "rms_error", "rms_tolerance", "rms_margin",
                                                    "nmse", "worst_coords"};
    static const std::vector<std::string> memory = {"leak_bytes_per_call", "leak_noise_floor_bytes_per_call", "abi_peak_bytes",
                                                    "peak_baseline_bytes", "peak_growth_pct"};
    static const std::vector<std::string> perf = {"median_s", "baseline_median_s", "ratio", "ci_low", "ci_high", "p_adjusted", "status"};
    static const std::vector<std::string> cost = {"usd_per_million_tokens", "baseline_usd_per_million_tokens", "price_source"};
    static const std::vector<std::string> none;
    if (check == "golden") return golden;
    if (check == "memory") return memory;
    if (check == "perf") return perf;
    if (check == "cost") return cost;
    return none;
}
}  // namespace

int verdict_rank(Verdict v) {
    switch (v) {
    case Verdict::Error: return 0;
    case Verdict::Fail: return 1;
    case Verdict::Pass: return 2;
    case Verdict::Skip: return 3;
    }
    return 3;
}

std::vector<CheckRow> rows_failures_first(const RunResults &r) {
    std::vector<CheckRow> rows;
    for (const auto &c : r.results)
        for (const auto &k : c.checks) rows.push_back({&c, &k});
    std::stable_sort(rows.begin(), rows.end(), [](const CheckRow &a, const CheckRow &b) { return verdict_rank(a.check->verdict) < verdict_rank(b.check->verdict); });
    return rows;
}

std::vector<CheckCounts> counts_per_check(const RunResults &r) {
    std::vector<CheckCounts> out;
    for (const auto &c : r.results)
        for (const auto &k : c.checks) {
            auto it = std::find_if(out.begin(), out.end(), [&](const CheckCounts &x) { return x.check == k.check; });
            if (it == out.end()) it = out.insert(out.end(), CheckCounts{k.check});
            switch (k.verdict) {
            case Verdict::Pass: ++it->pass; break;
            case Verdict::Fail: ++it->fail; break;
            case Verdict::Skip: ++it->skip; break;
            case Verdict::Error: ++it->error; break;
            }
        }
    return out;
}

std::string format_number(const json::value *v) {
    if (!v || v->is_null()) return "-";
    if (v->is_string()) return std::string(v->get_string());
    if (v->is_int64() || v->is_uint64()) return json::serialize(*v);
    if (v->is_double()) return fmt::format("{:.3g}", v->get_double());
    return json::serialize(*v);
}

std::string key_numbers(const CheckResult &c) {
    std::string out;
    for (const auto &name : decisive_metrics(c.check))
        if (const auto *v = c.metrics.if_contains(name); v && !v->is_null())
            out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, format_number(v));
    return out;
}

FingerprintComparison compare_fingerprints(const RunResults &r, const std::vector<RunResults> &history) {
    if (!r.baseline_fingerprint.empty())  // an A/B run keeps side A's there
        return {r.ab.empty() ? "baseline" : "A side", diff_fingerprints(r.baseline_fingerprint, r.fingerprint)};
    for (auto it = history.rbegin(); it != history.rend(); ++it)
        if (!it->fingerprint.empty()) return {"previous run", diff_fingerprints(it->fingerprint, r.fingerprint)};
    return {};
}

}  // namespace attngate
