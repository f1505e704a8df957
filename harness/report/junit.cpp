// JUnit XML reporter: drift is a <failure>, a kernel that did not run to an answer (a
// crash, a hang, an error it returned) an <error>, as Catch2 and JUnit consumers expect.
// The output follows the JUnit XSD Jenkins validates with (tests/support/junit-10.xsd).
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

/// A testsuite with its testcases' summed time and the run's start as its timestamp (none
/// when the results do not say: an A/B run).
std::string suite_element(const std::string &name, const CheckCounts &n, double seconds, const std::string &timestamp,
                          const std::string &cases, const std::string &gated = "") {
    const std::string properties =
        gated.empty() ? "" : fmt::format("    <properties>\n      <property name=\"gated\" value=\"{}\"/>\n    </properties>\n", markup_escape(gated));
    return fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.6f}\"{}>\n{}{}"
                       "  </testsuite>\n",
                       markup_escape(name), n.total(), n.fail, n.error, n.skip, seconds,
                       timestamp.empty() ? "" : fmt::format(" timestamp=\"{}\"", markup_escape(timestamp)), properties, cases);
}

/// Each kernel source that did not load, an <error>: the run fails whatever its rows say.
/// Numbered, not named by the error, whose adapter address changes from run to run. A run
/// that did not complete is an <error> too: its rows are some of the plan's.
std::string load_suite(const RunResults &r, CheckCounts &all) {
    const std::string classname = fmt::format("attngate.{}.load", r.suite);
    std::string cases;
    CheckCounts n;
    if (!r.complete)
        cases += testcase("the run", classname, 0.0, Verdict::Error,
                          fmt::format("the run did not complete ({} case x kernel row(s) written): these results are partial", r.results.size()), ""), ++n.error;
    for (size_t i = 0; i < r.load_errors.size(); ++i, ++n.error)
        cases += testcase(fmt::format("kernel source {} of {}", i + 1, r.load_errors.size()), classname, 0.0, Verdict::Error,
                          "did not load: " + r.load_errors[i], "");
    all.error += n.error;
    return n.total() ? suite_element(classname, n, 0.0, r.started_at, cases) : "";
}

std::string workload_suite(const RunResults &r, CheckCounts &all) {
    const std::string classname = fmt::format("attngate.{}.workload", r.suite);
    std::string cases;
    CheckCounts n;
    for (const WorkloadResult &w : r.workloads) {
        const Verdict v = w.verdict.value_or(Verdict::Pass);
        const std::string numbers = fmt::format("monthly_cost={} baseline_monthly_cost={} change_pct={} price_source={}",
                                                format_field(w.monthly_cost), format_field(w.baseline_monthly_cost),
                                                format_field(w.change_pct), format_field(w.price_source));
        cases += testcase(format_field(w.workload), classname, 0.0, v, w.reason.value_or(""), numbers);
        n.pass += v == Verdict::Pass, n.fail += v == Verdict::Fail, n.skip += v == Verdict::Skip, n.error += v == Verdict::Error;
    }
    all.pass += n.pass, all.fail += n.fail, all.skip += n.skip, all.error += n.error;  // a failed workload fails the whole file too
    return n.total() ? suite_element(classname, n, 0.0, r.started_at, cases) : "";
}

}  // namespace

std::string junit_serialize(const RunResults &r) {
    std::string suites;
    CheckCounts all;
    double total_s = 0.0;
    const std::vector<FailureGroup> groups = failure_groups(r);
    const auto group_of = index_groups(groups);
    for (const auto &counts : counts_per_check(r)) {
        const std::string classname = fmt::format("attngate.{}.{}", r.suite, enum_name(counts.check));
        std::string cases;
        double suite_s = 0.0;
        for (const auto &c : r.results)
            for (const auto &k : c.checks)
                if (k.check() == counts.check) {
                    // The case x kernel's observed call is timed once; its first check carries
                    // that time and the others, which judge the same call, none: totals add up.
                    const double seconds = &k == &c.checks.front() ? c.seconds : 0.0;
                    suite_s += seconds;
                    cases += testcase(c.case_id + " / " + c.kernel, classname, seconds, k.verdict, k.reason, key_numbers(k), &k,
                                      group_of.contains(&k) ? group_of.at(&k) : nullptr);
                }
        // The perf suite says how many of its rows were judged: a skipped row is not a passed one.
        const std::string gated = counts.check == CheckName::Perf || counts.check == CheckName::Numerics ? coverage_said(check_coverage(r, counts.check)) : "";
        suites += suite_element(classname, counts, suite_s, r.started_at, cases, gated);
        total_s += suite_s;
        all.pass += counts.pass, all.fail += counts.fail, all.skip += counts.skip, all.error += counts.error;
    }
    suites += workload_suite(r, all);
    suites += load_suite(r, all);
    // No `skipped` here: the XSD has it on <testsuite> only.
    return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"attngate {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                       "time=\"{:.6f}\">\n{}</testsuites>\n",
                       markup_escape(r.suite), all.total(), all.fail, all.error, total_s, suites);
}

}  // namespace attngate
