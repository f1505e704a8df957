// Results-file comparison.
#include "results/compare.hpp"

namespace attngate {

bool CompareReport::regression() const {
    if (!did_not_load_b.empty() || !b_complete) return true;
    for (const auto &r : rows)
        if (r.decision.status == PerfStatus::Regression) return true;
    return false;
}

std::vector<double> perf_samples(const CaseResult &r, std::string *machine_class) {
    std::vector<double> out;
    for (const auto &c : r.checks) {
        const PerfMetrics *m = c.get<PerfMetrics>();
        if (!m) continue;
        if (m->samples_s) out.insert(out.end(), m->samples_s->begin(), m->samples_s->end());
        if (machine_class && m->machine_class) *machine_class = *m->machine_class;
    }
    return out;
}

namespace {

/// A case as its params record it ("batch=1 seq_q=32 ... dtype=\"f32\" causal=true ..."), over
/// the keys `keys` records too (a later attngate records more), in its order; empty when none.
std::string definition_of(const CaseResult &r, const CaseResult &keys) {
    std::string out;
    for (const auto &kv : keys.params)
        if (const auto *v = r.params.if_contains(kv.key())) out += fmt::format("{}{}={}", out.empty() ? "" : " ", std::string(kv.key()), json::serialize(*v));
    return out;
}

/// A case x kernel of both files with another shape or definition in each (the suite changed
/// under the same case id: seq_q, dtype, causal, scale...) is bad input naming the case and
/// both: neither its timings nor its outputs compare.
Result<void> check_same_shapes(const RunResults &a, const RunResults &b) {
    for (const auto &rb : b.results) {
        const CaseResult *ra = a.find(rb.case_id, rb.kernel);
        if (!ra) continue;
        const std::string sa = definition_of(*ra, rb), sb = definition_of(rb, *ra);
        if (!sa.empty() && !sb.empty() && sa != sb)
            return fail(ErrorKind::BadInput, "case {} / {}: shape {} in A but {} in B: another case under the same id does not compare",
                        rb.case_id, rb.kernel, sa, sb);
    }
    return {};
}

}  // namespace

Result<CompareReport> compare_results(const RunResults &a, const RunResults &b, const DecisionPolicy &policy) {
    if (auto same = check_same_shapes(a, b); !same) return std::unexpected(same.error());
    CompareReport report;
    std::vector<PerfDecision> decisions;
    for (const auto &rb : b.results) {
        const CaseResult *ra = a.find(rb.case_id, rb.kernel);
        if (!ra) continue;
        std::string ma, mb;
        const auto sa = perf_samples(*ra, &ma), sb = perf_samples(rb, &mb);
        if (sa.empty() || sb.empty()) continue;
        if (ma != mb)
            return fail(ErrorKind::BadInput, "{} / {}: timed on machine class \"{}\" in A and \"{}\" in B: timings do not compare",
                        rb.case_id, rb.kernel, ma, mb);
        report.machine_a = ma;
        report.machine_b = mb;
        report.rows.push_back({rb.case_id, rb.kernel, {}});
        decisions.push_back(decide(sb, sa, policy));
    }
    for (const auto &ra : a.results)
        if (!b.find(ra.case_id, ra.kernel)) report.only_in_a.push_back(fmt::format("{} / {}", ra.case_id, ra.kernel));
    report.did_not_load_b = b.load_errors;
    report.b_complete = b.complete;
    apply_benjamini_hochberg(decisions, policy.alpha);
    for (size_t i = 0; i < decisions.size(); ++i) report.rows[i].decision = decisions[i];
    return report;
}

}  // namespace attngate
