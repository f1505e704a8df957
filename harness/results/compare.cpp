// Results-file comparison.
#include "results/compare.hpp"

namespace attngate {

bool CompareReport::regression() const {
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

Result<CompareReport> compare_results(const RunResults &a, const RunResults &b, const DecisionPolicy &policy) {
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
    apply_benjamini_hochberg(decisions, policy.alpha);
    for (size_t i = 0; i < decisions.size(); ++i) report.rows[i].decision = decisions[i];
    return report;
}

}  // namespace attngate
