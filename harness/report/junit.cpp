// JUnit XML reporter.
#include "report/junit.hpp"

#include <fmt/format.h>

#include "report/escape.hpp"
#include "report/summary.hpp"

namespace attngate {

namespace {

std::string testcase(const std::string &name, const std::string &classname, double seconds, Verdict v, const std::string &reason,
                     const std::string &numbers) {
    std::string body;
    if (v == Verdict::Fail)
        body = fmt::format("\n      <failure message=\"{}\" type=\"drift\">{}{}</failure>\n    ", markup_escape(reason),
                           markup_escape(reason), numbers.empty() ? "" : "\n" + markup_escape(numbers));
    else if (v == Verdict::Skip)
        body = fmt::format("\n      <skipped message=\"{}\"/>\n    ", markup_escape(reason));
    if (v == Verdict::Pass && !numbers.empty()) body = fmt::format("\n      <system-out>{}</system-out>\n    ", markup_escape(numbers));
    return fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.6f}\">{}</testcase>\n", markup_escape(name),
                       markup_escape(classname), seconds, body);
}

std::string suite_element(const std::string &name, size_t tests, size_t failures, size_t skipped, const std::string &cases) {
    return fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n{}  </testsuite>\n",
                       markup_escape(name), tests, failures, skipped, cases);
}

std::string workload_suite(const RunResults &r) {
    const std::string classname = fmt::format("attngate.{}.workload", r.suite);
    std::string cases;
    size_t tests = 0, failures = 0, skipped = 0;
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
        ++tests, failures += v == Verdict::Fail, skipped += v == Verdict::Skip;
    }
    return tests ? suite_element(classname, tests, failures, skipped, cases) : "";
}

}  // namespace

std::string junit_serialize(const RunResults &r) {
    std::string suites;
    size_t tests = 0, failures = 0, skipped = 0;
    for (const auto &counts : counts_per_check(r)) {
        const std::string classname = fmt::format("attngate.{}.{}", r.suite, counts.check);
        std::string cases;
        for (const auto &c : r.results)
            for (const auto &k : c.checks)
                if (k.check == counts.check)
                    cases += testcase(c.case_id + " / " + c.kernel, classname, c.seconds, k.verdict, k.reason, key_numbers(k));
        suites += suite_element(classname, counts.pass + counts.fail + counts.skip, counts.fail, counts.skip, cases);
        tests += counts.pass + counts.fail + counts.skip, failures += counts.fail, skipped += counts.skip;
    }
    suites += workload_suite(r);
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"attngate {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                       "skipped=\"{}\">\n{}</testsuites>\n",
                       markup_escape(r.suite), tests, failures, skipped, suites);
}

}  // namespace attngate
