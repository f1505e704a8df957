// Shared report vocabulary: the same rows, counts and numbers in every format.
#include "report/summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

namespace attngate {

namespace {

/// A measured field as the reports show it; nullopt when absent or null.
template <class T>
std::optional<std::string> shown(const std::optional<T> &v) {
    if (!v) return std::nullopt;
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(*v)) return std::nullopt;
        return fmt::format("{:.3g}", *v);
    } else if constexpr (std::is_integral_v<T>) {
        return fmt::format("{}", *v);
    } else if constexpr (std::is_enum_v<T>) {
        return std::string(enum_name(*v));
    } else {
        return std::string(*v);
    }
}

/// The metrics that decide a check, in the order a person reads them: "name=value" for each
/// that was measured, and their names.
template <auto... Fields>
struct KeyFields {
    static std::string numbers([[maybe_unused]] const CheckResult &c) {
        std::string out;
        [[maybe_unused]] const auto add = [&](const char *name, const std::optional<std::string> &v) {
            if (v) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, *v);
        };
        (add(field_name<Fields>(), shown(c.as<record_of_t<Fields>>().*Fields)), ...);
        return out;
    }
    static std::vector<std::string> names() { return {field_name<Fields>()...}; }
};

/// visit(KeyFields<...>{}) with the check's key fields.
template <class Visit>
auto with_key_fields(CheckName check, Visit visit) {
    switch (check) {
    case CheckName::Golden:
        return visit(KeyFields<&GoldenMetrics::max_abs_error, &GoldenMetrics::tolerance, &GoldenMetrics::margin, &GoldenMetrics::rms_error,
                               &GoldenMetrics::rms_tolerance, &GoldenMetrics::rms_margin, &GoldenMetrics::nmse, &GoldenMetrics::worst_coords>{});
    case CheckName::Memory:
        return visit(KeyFields<&MemoryMetrics::leak_bytes_per_call, &MemoryMetrics::leak_noise_floor_bytes_per_call, &MemoryMetrics::abi_peak_bytes,
                               &MemoryMetrics::peak_baseline_bytes, &MemoryMetrics::peak_growth_pct>{});
    case CheckName::Perf:
        return visit(KeyFields<&PerfMetrics::median_s, &PerfMetrics::baseline_median_s, &PerfMetrics::fastest_s, &PerfMetrics::window_fastest_s,
                               &PerfMetrics::ratio, &PerfMetrics::ci_low,
                               &PerfMetrics::ci_high, &PerfMetrics::p_adjusted, &PerfMetrics::status>{});
    case CheckName::Cost:
        return visit(KeyFields<&CostMetrics::usd_per_million_tokens, &CostMetrics::baseline_usd_per_million_tokens, &CostMetrics::price_source>{});
    default: return visit(KeyFields<>{});
    }
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
            auto it = std::find_if(out.begin(), out.end(), [&](const CheckCounts &x) { return x.check == k.check(); });
            if (it == out.end()) it = out.insert(out.end(), CheckCounts{k.check()});
            switch (k.verdict) {
            case Verdict::Pass: ++it->pass; break;
            case Verdict::Fail: ++it->fail; break;
            case Verdict::Skip: ++it->skip; break;
            case Verdict::Error: ++it->error; break;
            }
        }
    return out;
}

namespace {

/// Why a numerics row was not gated, or "" when its bits were compared with a baseline (or side A).
std::string numerics_not_gated_because(const CheckResult &k, const RunResults &r) {
    const NumericsMetrics *m = k.get<NumericsMetrics>();
    if (k.verdict == Verdict::Error || !m || !m->status) return "not run";
    if (*m->status == NumericsStatus::NoReference) return "no baseline for path " + (r.numerics_class.empty() ? "?" : r.numerics_class);
    if (m->against && *m->against == "the last run") return "compared with the last run only";
    return "";
}

}  // namespace

CheckCoverage check_coverage(const RunResults &r, CheckName check) {
    CheckCoverage c;
    c.check = check;
    for (const auto &row : r.results)
        for (const auto &k : row.checks) {
            if (k.check() != check) continue;
            ++c.rows;
            const std::string why = check == CheckName::Perf ? perf_not_gated_because(k) : numerics_not_gated_because(k, r);
            if (why.empty()) {
                ++c.gated;
                continue;
            }
            auto it = std::find_if(c.not_gated.begin(), c.not_gated.end(), [&](const auto &p) { return p.first == why; });
            if (it == c.not_gated.end()) it = c.not_gated.insert(c.not_gated.end(), {why, 0});
            ++it->second;
        }
    return c;
}

std::string coverage_said(const CheckCoverage &c) {
    if (c.rows == 0) return "";
    std::string why;
    for (const auto &[reason, n] : c.not_gated) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, reason);
    return fmt::format("{}: {} of {} rows gated{}", enum_name(c.check), c.gated, c.rows, why.empty() ? "" : " (" + why + ")");
}

std::string unchecked_said(const RunResults &r) {
    std::vector<std::string> missing;
    for (CheckName c : {CheckName::Golden, CheckName::Memory, CheckName::Perf, CheckName::Cost})
        if (std::find(r.checks.begin(), r.checks.end(), c) == r.checks.end()) missing.push_back(enum_name(c));
    if (missing.empty()) return "";
    return fmt::format("not checked: {}{}", fmt::join(missing, ", "),
                       r.ab.empty() ? " (--checks)" : " (`attngate ab` compares golden, numerics, memory and perf; `attngate run` gates the others)");
}

std::string load_errors_said(const RunResults &r) {
    if (r.load_errors.empty()) return "";
    return fmt::format("{} kernel source(s) did not load, {}", r.load_errors.size(),
                       r.results.empty() ? "nothing ran" : "the other kernels ran");
}

std::string shard_said(const RunResults &r) {
    if (r.shard.empty()) return "";
    const auto size_of = [&](const char *key) {
        const auto *v = r.shard.if_contains(key);
        return v && v->is_array() ? v->get_array().size() : size_t{0};
    };
    const auto number = [&](const char *key) {
        const auto *v = r.shard.if_contains(key);
        return v && v->is_int64() ? v->get_int64() : int64_t{0};
    };
    const auto *unit = r.shard.if_contains("unit");
    const bool cases = unit && unit->is_string() && unit->get_string() == "case";
    return fmt::format("shard {} of {}: {} of the plan's {} {} ran here; the suite's verdict is that of `attngate merge` over every shard",
                       number("index"), number("count"), size_of("mine"), size_of("plan"), cases ? "cases" : "case × kernel rows");
}

std::string numerics_changed_said(const RunResults &r) {
    std::vector<std::string> moved;
    for (const auto &row : r.results)
        for (const auto &k : row.checks) {
            const NumericsMetrics *m = k.get<NumericsMetrics>();
            // A row another check failed is not one whose bits moved "without failing": its failure says why.
            if (!m || k.verdict != Verdict::Pass || m->status != NumericsStatus::Changed || row.verdict() != Verdict::Pass) continue;
            // A NaN that appeared or vanished has no distance in ulp: said as such, not as "max 0 ulp".
            std::string how = m->max_ulp && *m->max_ulp && **m->max_ulp > 0 ? fmt::format(", max {} ulp of float32", **m->max_ulp) : "";
            if (m->nan_changed.value_or(0) > 0) how += fmt::format(", {} became or stopped being NaN", *m->nan_changed);
            moved.push_back(fmt::format("{} / {} ({} of {} elements changed{})", row.case_id, row.kernel, m->changed.value_or(0),
                                        m->compared.value_or(0), how));
        }
    if (moved.empty()) return "";
    std::string named;
    for (size_t i = 0; i < moved.size() && i < 3; ++i) named += (i ? "; " : "") + moved[i];
    return fmt::format("numerics: bits changed on {} row(s) without failing: {}{}", moved.size(), named,
                       moved.size() > 3 ? fmt::format("; and {} more", moved.size() - 3) : "");
}

std::string program_changed_said(const RunResults &r) {
    struct Count { size_t changed = 0, compared = 0; int64_t added = 0, removed = 0; };
    std::map<std::string, Count> kernels;  // per kernel: rows changed of rows compared, lines
    size_t rows = 0;
    bool failing = false;
    for (const auto &row : r.results)
        for (const auto &k : row.checks) {
            const ProgramMetrics *m = k.get<ProgramMetrics>();
            if (!m || !m->status || m->status == ProgramStatus::NoReference) continue;
            Count &c = kernels[row.kernel];
            ++c.compared;
            if (m->status != ProgramStatus::Changed) continue;
            ++c.changed, ++rows;
            c.added += m->lines_added.value_or(0), c.removed += m->lines_removed.value_or(0);
            failing = failing || k.verdict == Verdict::Fail;
        }
    if (rows == 0) return "";
    std::string named;
    for (const auto &[kernel, c] : kernels)
        if (c.changed) named += fmt::format("{}{} {} of {} cases (+{} -{} lines)", named.empty() ? "" : "; ", kernel, c.changed, c.compared, c.added, c.removed);
    return fmt::format("program: the TPU program changed on {} row(s){}: {}", rows, failing ? "" : " without failing", named);
}

std::vector<std::string> gating_said(const RunResults &r) {
    std::vector<std::string> out;
    for (CheckName check : {CheckName::Perf, CheckName::Numerics})
        if (std::string said = coverage_said(check_coverage(r, check)); !said.empty()) out.push_back(std::move(said));
    return out;
}

namespace {

std::string short_list(const json::value *v) {
    if (!v || !v->is_array()) return "-";
    const json::array &a = v->get_array();
    std::string s = "[";
    for (size_t i = 0; i < a.size(); ++i) {
        if (a.size() > 8 && i == 6) {
            s += "…, ";
            i = a.size() - 1;
        }
        s += format_number(&a[i]) + (i + 1 < a.size() ? ", " : "");
    }
    return s + "]";
}

}  // namespace

std::string paged_said(const json::object &params) {
    const json::value *p = params.if_contains("paged");
    if (!p || !p->is_object()) return "";
    const json::object &o = p->get_object();
    const json::value *kv = o.if_contains("kv_lens");
    return fmt::format("paged: {} seqs, q_lens {}, kv_lens {}, page_size {}, {} pages, {}", kv && kv->is_array() ? kv->get_array().size() : 0,
                       short_list(o.if_contains("q_lens")), short_list(kv), format_number(o.if_contains("page_size")),
                       format_number(o.if_contains("pages")), format_number(o.if_contains("layout")));
}

std::string format_number(const json::value *v) {
    if (!v || v->is_null()) return "-";
    if (v->is_string()) return std::string(v->get_string());
    if (v->is_int64() || v->is_uint64()) return json::serialize(*v);
    if (v->is_double()) return fmt::format("{:.3g}", v->get_double());
    return json::serialize(*v);
}

std::string key_numbers(const CheckResult &c) {
    return with_key_fields(c.check(), [&](auto fields) { return fields.numbers(c); });
}

std::vector<std::string> key_number_names(CheckName check) {
    return with_key_fields(check, [](auto fields) { return fields.names(); });
}

FingerprintComparison compare_fingerprints(const RunResults &r, const std::vector<RunResults> &history) {
    if (!r.baseline_fingerprint.empty())  // an A/B run keeps side A's there
        return {r.ab.empty() ? "baseline" : "A side", diff_fingerprints(r.baseline_fingerprint, r.fingerprint)};
    for (auto it = history.rbegin(); it != history.rend(); ++it)
        if (!it->fingerprint.empty()) return {"previous run", diff_fingerprints(it->fingerprint, r.fingerprint)};
    return {};
}

}  // namespace attngate
