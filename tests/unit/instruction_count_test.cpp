// The instruction-count mode's pure parts: reading callgrind's dump totals, and the plain
// threshold of the instructions check.
#include <algorithm>

#include <catch2/catch.hpp>

#include "backend/instruction_count.hpp"
#include "checks/instructions_check.hpp"

using namespace attngate;

TEST_CASE("callgrind_total reads the totals line, else the summary, else says why", "[instructions]") {
    const std::string dump = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 900020\nfn=(1) main\n0 5\ntotals: 900021\n";
    CHECK(callgrind_total(dump, "d").value() == 900021.0);
    CHECK(callgrind_total("events: Ir\nsummary: 42\n", "d").value() == 42.0);
    const auto none = callgrind_total("events: Ir\n", "cg.out.1");
    REQUIRE_FALSE(none);
    CHECK_THAT(none.error().message, Catch::Contains("cg.out.1") && Catch::Contains("not a callgrind dump"));
    REQUIRE_FALSE(callgrind_total("totals: lots\n", "d"));
}

TEST_CASE("callgrind_argv runs valgrind's callgrind writing where asked", "[instructions]") {
    const auto argv = callgrind_argv("/tmp/x/cg.out");
    REQUIRE(argv.size() >= 3);
    CHECK(argv[0] == "valgrind");
    CHECK(argv[1] == "--tool=callgrind");
    CHECK(std::find(argv.begin(), argv.end(), "--callgrind-out-file=/tmp/x/cg.out") != argv.end());
}

TEST_CASE("counting outside callgrind is an error, never a number", "[instructions]") {
    const auto n = count_instructions([] {});
    REQUIRE_FALSE(n);
    CHECK_THAT(n.error().message, Catch::Contains("callgrind"));
}

TEST_CASE("the instructions check is a plain threshold on the ratio to the baseline", "[instructions]") {
    const auto ok = instructions_check(1049.0, 1000.0, 5, "m", "");
    CHECK(ok.check() == CheckName::Instructions);
    CHECK(ok.verdict == Verdict::Pass);
    CHECK(ok.as<InstructionsMetrics>().status == PerfCheckStatus::Ok);
    CHECK(*ok.as<InstructionsMetrics>().ratio == Approx(1.049));
    const auto slow = instructions_check(1051.0, 1000.0, 5, "m", "");
    CHECK(slow.verdict == Verdict::Fail);
    CHECK(slow.as<InstructionsMetrics>().status == PerfCheckStatus::Regression);
    CHECK_THAT(slow.reason, Catch::Contains("+5.10%"));
    const auto faster = instructions_check(900.0, 1000.0, 5, "m", "");
    CHECK(faster.verdict == Verdict::Pass);
    CHECK(faster.as<InstructionsMetrics>().status == PerfCheckStatus::Improvement);
}

TEST_CASE("without an instructions baseline the check skips, or fails in strict mode, saying why", "[instructions]") {
    const auto skip = instructions_check(1000.0, std::nullopt, 5, "m", "no instructions baseline for a / k");
    CHECK(skip.verdict == Verdict::Skip);
    CHECK(skip.as<InstructionsMetrics>().status == PerfCheckStatus::NoBaseline);
    CHECK(skip.as<InstructionsMetrics>().instructions == 1000.0);  // still recordable as the first baseline
    CHECK(skip.reason == "no instructions baseline for a / k");
    const auto strict = instructions_check(1000.0, std::nullopt, 5, "m", "no instructions baseline for a / k", true);
    CHECK(strict.verdict == Verdict::Fail);
    CHECK_THAT(strict.reason, Catch::StartsWith("ungated in strict mode"));
}
