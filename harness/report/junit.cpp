// JUnit XML reporter: drift is a <failure>, a kernel that did not run to an answer (a
// crash, a hang, an error it returned) an <error>, as Catch2 and JUnit consumers expect.
#include "report/junit.hpp"

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/failure_groups.hpp"
#include "report/summary.hpp"

namespace attngate {

namespace {

/// A failing check's <failure> or <error>: the message is its group's line (the same
/// grouping as every other report), the body its own reason and numbers.
std::string failure_element(Verdict v, const std::string &message, const std::string &reason, const std::string &numbers, const CheckResult *check) {
    return fmt::format("\n      <{0} message=\"{1}\" type=\"{2}\">{3}{4}</{0}>\n    ", v == Verdict::Fail ? "failure" : "error",
                       markup_escape(message), v == Verdict::Fail ? "drift" : check ? error_kind(*check) : "error", markup_escape(reason),
                       numbers.empty() ? "" : "\n" + markup_escape(numbers));
}

std::string testcase(const std::string &name, const std::string &classname, double seconds, Verdict v, const std::string &reason,
                     const std::string &numbers, const CheckResult *check = nullptr, const FailureGroup *group = nullptr) {
    std::string body;
    if (v == Verdict::Fail || v == Verdict::Error) body = failure_element(v, group ? describe_group(*group) : reason, reason, numbers, check);
    else if (v == Verdict::Skip)
        body = fmt::format("\n      <skipped message=\"{}\"/>\n    ", markup_escape(reason));
    if (v == Verdict::Pass && !numbers.empty()) body = fmt::format("\n      <system-out>{}</system-out>\n    ", markup_escape(numbers));
    return fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.6f}\">{}</testcase>\n", markup_escape(name),
                       markup_escape(classname), seconds, body);
}

std::string suite_element(const std::string &name, const CheckCounts &n, const std::string &cases) {
    return fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n",
                       markup_escape(name), n.total(), n.fail, n.error, n.skip, cases);
}

std::string workload_suite(const RunResults &r) {
    const std::string classname = fmt::format("attngate.{}.workload", r.suite);
    std::string cases;
    CheckCounts n;
    for (const auto &w : r.workloads) {
        if (!w.is_object()) continue;
        const json::object &o = w.get_object();
        const auto *name = o.if_contains("workload");
        const auto *verdict = o.if_contains("verdict");
        const Verdict v = verdict && verdict->is_string() ? parse_verdict(verdict->get_string()).value_or(Verdict::Pass) : Verdict::Pass;
        const auto *reason = o.if_contains("reason");
        const std::string numbers = fmt::format("monthly_cost={} baseline_monthly_cost={} change_pct={} price_source={}",
                                                format_number(o.if_contains("monthly_cost")), format_number(o.if_contains("baseline_monthly_cost")),
                                                format_number(o.if_contains("change_pct")), format_number(o.if_contains("price_source")));
        cases += testcase(format_number(name), classname, 0.0, v, reason ? format_number(reason) : "", numbers);
        n.pass += v == Verdict::Pass, n.fail += v == Verdict::Fail, n.skip += v == Verdict::Skip, n.error += v == Verdict::Error;
    }
    return n.total() ? suite_element(classname, n, cases) : "";
}

}  // namespace

std::string junit_serialize(const RunResults &r) {
    std::string suites;
    CheckCounts all;
    const std::vector<FailureGroup> groups = failure_groups(r);
    const auto group_of = index_groups(groups);
    for (const auto &counts : counts_per_check(r)) {
        const std::string classname = fmt::format("attngate.{}.{}", r.suite, enum_name(counts.check));
        std::string cases;
        for (const auto &c : r.results)
            for (const auto &k : c.checks)
                if (k.check() == counts.check)
                    cases += testcase(c.case_id + " / " + c.kernel, classname, c.seconds, k.verdict, k.reason, key_numbers(k), &k,
                                     group_of.contains(&k) ? group_of.at(&k) : nullptr);
        suites += suite_element(classname, counts, cases);
        all.pass += counts.pass, all.fail += counts.fail, all.skip += counts.skip, all.error += counts.error;
    }
    suites += workload_suite(r);
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"attngate {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                       "skipped=\"{}\">\n{}</testsuites>\n",
                       markup_escape(r.suite), all.total(), all.fail, all.error, all.skip, suites);
}

}  // namespace attngate
