// Unit tests of the failure grouping every report shares: one group per kernel x check x
// verdict x kind of reason, with its count, cases and the range of its deciding number.
#include <catch2/catch.hpp>

#include "io/files.hpp"
#include "report/console.hpp"
#include "report/failure_groups.hpp"
#include "report/html.hpp"
#include "report/markdown.hpp"
#include "test_support.hpp"

using namespace attngate;
using attngate::test::results_with;

namespace {

CaseResult with_check(const std::string &case_id, const std::string &kernel, CheckResult k) {
    CaseResult c;
    c.case_id = case_id;
    c.kernel = kernel;
    c.checks.push_back(std::move(k));
    return c;
}

CheckResult leak(double bytes_per_call) {
    MemoryMetrics m;
    m.leak_bytes_per_call = bytes_per_call;
    return CheckResult(m, Verdict::Fail, fmt::format("heap leak: {:.1f} B retained per call over 10 calls (outside the ABI allocator)", bytes_per_call));
}

CheckResult golden(double margin) {
    GoldenMetrics m;
    m.margin = margin;
    return CheckResult(m, margin > 1 ? Verdict::Fail : Verdict::Pass, fmt::format("max abs error {:.3g} > tolerance 0.01 (margin {:.2f})", margin / 100, margin));
}

}  // namespace

TEST_CASE("the kind of a reason is its words before the first number or separator", "[report]") {
    CHECK(reason_kind(leak(16.5)) == "heap leak");
    CHECK(reason_kind(golden(3.0)) == "max abs error");
    CHECK(reason_kind(CheckResult(CheckName::Golden, Verdict::Fail, "12 NaN/inf output(s) where the golden is finite, first at [0, 1]")) ==
          "NaN/inf output(s) where the golden is finite");
    CHECK(reason_kind(CheckResult(CheckName::Perf, Verdict::Fail, "")) == "perf drift");
    CheckResult hang(CheckName::Golden, Verdict::Error, "hung: killed after 5.0 s time limit");
    hang.crash = CrashRecord{"timeout", 5.0, "", std::nullopt, std::nullopt, std::nullopt};
    CHECK(reason_kind(hang) == "hang (time limit)");
    CHECK(error_kind(hang) == "hang");
}

TEST_CASE("failures group per kernel, check and kind with their count, cases and range", "[report]") {
    std::vector<CaseResult> cases;
    for (int i = 0; i < 4; ++i) cases.push_back(with_check(fmt::format("c{}", i), "leaky", leak(16.5 + i)));
    cases.push_back(with_check("c0", "wrong", golden(0.5)));
    cases.push_back(with_check("c1", "wrong", golden(2.25)));
    cases.push_back(with_check("c2", "wrong", golden(4.0)));
    const RunResults r = results_with(std::move(cases));
    const std::vector<FailureGroup> groups = failure_groups(r);
    REQUIRE(groups.size() == 2);
    CHECK(describe_group(groups[0]) == "leaky · memory: heap leak on 4/4 cases, 16.5–19.5 B/call");
    CHECK(describe_group(groups[1]) == "wrong · golden: max abs error on 2/3 cases, 2.25–4 × tolerance");
    CHECK(group_cases(groups[0], 2) == "c0, c1, … +2");
    CHECK(index_groups(groups).at(&r.results[5].checks[0]) == &groups[1]);
}

TEST_CASE("HTML, Markdown and the console show the same group lines", "[report]") {
    std::vector<CaseResult> cases;
    for (int i = 0; i < 30; ++i) cases.push_back(with_check(fmt::format("case_{}", i), "leaky", leak(16.5)));
    cases.push_back(with_check("case_0", "wrong", golden(2.0)));
    const RunResults r = results_with(std::move(cases));
    const std::string html = html_serialize(r, {}), md = markdown_serialize(r, {}), console = console_summary(r, "x.json");
    for (const auto &g : failure_groups(r)) {
        CHECK(html.find("<span class=\"group-line\">" + describe_group(g) + "</span>") != std::string::npos);
        CHECK(console.find(describe_group(g)) != std::string::npos);
    }
    CHECK(md.find("leaky · memory: heap leak on 30/30 cases, 16.5 B/call") != std::string::npos);
    CHECK(console.find("… and 25 more") != std::string::npos);
    const std::string top = md.substr(0, md.find("<details>"));
    CHECK(std::count(top.begin(), top.end(), '\n') < 80);
}

TEST_CASE("a kernel that fails its golden on every case it ran is pointed at conform, in every report", "[report]") {
    std::vector<CaseResult> cases;
    // "scaled" fails all three cases it ran, by two kinds of reason (two groups): one kernel to advise.
    cases.push_back(with_check("c0", "scaled", golden(40.0)));
    cases.push_back(with_check("c1", "scaled", golden(3.0)));
    cases.push_back(with_check("c2", "scaled", CheckResult(CheckName::Golden, Verdict::Fail, "RMS error 0.1 > RMS tolerance 0.01")));
    cases.push_back(with_check("c3", "scaled", CheckResult(CheckName::Golden, Verdict::Skip, "unsupported")));
    // "wrong" passes one case: a bug in some cases, not a convention.
    cases.push_back(with_check("c0", "wrong", golden(2.0)));
    cases.push_back(with_check("c1", "wrong", golden(0.5)));
    // "once" fails its only case: too little to say.
    cases.push_back(with_check("c0", "once", golden(2.0)));
    const RunResults r = results_with(std::move(cases));
    const std::vector<std::string> advice = convention_advice(r);
    REQUIRE(advice.size() == 1);
    CHECK(advice[0].starts_with("scaled failed its golden on every case it computed (3): a kernel that follows another convention"));
    CHECK(advice[0].ends_with("attngate conform --kernel scaled names the one it follows"));
    CHECK(console_summary(r, "x.json").find("  → " + advice[0]) != std::string::npos);
    CHECK(markdown_serialize(r, {}).find("- **Try:** scaled failed its golden on every case it computed (3)") != std::string::npos);
    CHECK(html_serialize(r, {}).find("<p class=\"advice\">scaled failed its golden on every case it computed (3)") != std::string::npos);
    // A run where every kernel passes a case says nothing of the kind.
    CHECK(convention_advice(results_with({with_check("c0", "ok", golden(0.5)), with_check("c1", "ok", golden(2.0))})).empty());

    // A block configuration is its kernel's; a plugin's kernel is probed with its plugin, an
    // adapter's with its adapter; past three kernels, the rest are counted.
    attngate::test::TempDir dir;
    const std::string plugin = (dir.path() / "libteam.so").string();
    REQUIRE(write_file_atomic(plugin, "not really a library"));
    std::vector<CaseResult> many;
    const auto failing = [&](const std::string &kernel, const std::string &origin) {
        for (const char *id : {"c0", "c1"}) {
            many.push_back(with_check(id, kernel, golden(9.0)));
            many.back().kernel_origin = origin;
        }
    };
    failing("flash[bq=16,bk=32]", "built-in");
    failing("team", plugin);
    failing("jaxed", "python3 adapter.py --interpret auto");
    failing("fourth", "built-in");
    failing("fifth", "http://127.0.0.1:8080");
    const std::vector<std::string> five = convention_advice(results_with(std::move(many)));
    REQUIRE(five.size() == kMaxConventionAdvice + 1);
    CHECK(five[0].find("; attngate conform --kernel flash names") != std::string::npos);
    CHECK(five[1].find("; attngate conform --plugin " + plugin + " --kernel team names") != std::string::npos);
    CHECK(five[2].find("; attngate conform --adapter 'python3 adapter.py --interpret auto' --kernel jaxed names") != std::string::npos);
    CHECK(five[3] == "… and 2 more kernel(s) that failed their golden on every case they computed");
}

TEST_CASE("a kernel whose outputs hold NaN is neither given a tolerance range nor pointed at conform", "[report]") {
    // From a new user's trial: "NaN/inf output(s) where the golden is finite on 9/10 cases,
    // 0.118-0.273 x tolerance" (the finite elements' margin), then the advice to find the
    // convention the kernel follows: no convention makes a NaN.
    std::vector<CaseResult> cases;
    for (const char *id : {"c0", "c1", "c2"}) {
        GoldenMetrics m;
        m.margin = 0.2;
        m.new_nonfinite = 1;
        cases.push_back(with_check(id, "nanny", CheckResult(m, Verdict::Fail, "1 NaN/inf output(s) where the golden is finite, first at [0, 0]")));
    }
    const RunResults r = results_with(std::move(cases));
    CHECK(convention_advice(r).empty());
    const std::vector<FailureGroup> groups = failure_groups(r);
    REQUIRE(groups.size() == 1);
    const std::string said = describe_group(groups[0]);
    CHECK(said.find("NaN/inf output(s) where the golden is finite on 3/3 cases") != std::string::npos);
    CHECK(said.find("tolerance") == std::string::npos);
}
