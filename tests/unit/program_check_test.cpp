// The program check: unified diffs of known texts, and the verdicts against a reference.
#include <catch2/catch.hpp>

#include "checks/contract_check.hpp"
#include "checks/program_check.hpp"

using namespace attngate;

namespace {
ProgramObservation program(const std::string &body) {
    ProgramObservation p;
    p.target = "v6e";
    p.parts.push_back({"mosaic", "k", "sha-" + body, 3, body});
    p.parts.push_back({"stablehlo", "stablehlo", "sha-hlo", 1, "hlo\n"});
    return p;
}
}  // namespace

TEST_CASE("unified_diff shows a changed line with three lines of context") {
    const TextDiff d = unified_diff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\nE\nf\ng\nh\n", "mosaic k");
    CHECK(d.added == 1);
    CHECK(d.removed == 1);
    CHECK(d.unified == "--- mosaic k (before)\n+++ mosaic k (after)\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
}

TEST_CASE("unified_diff of identical texts has no hunk") {
    const TextDiff d = unified_diff("x\ny\n", "x\ny\n", "p");
    CHECK(d.added == 0);
    CHECK(d.removed == 0);
    CHECK(d.unified.find("@@") == std::string::npos);
}

TEST_CASE("program_check: no program is a skip with the host's reason") {
    ProgramObservation p;
    p.unavailable = "adapter x has no POST /v1/program";
    const CheckResult r = program_check(p, std::nullopt, false, "");
    CHECK(r.verdict == Verdict::Skip);
    CHECK(r.reason == p.unavailable);
}

TEST_CASE("program_check: identical, changed (a pass unless stable is asked for), and the diff") {
    const ProgramObservation before = program("x\ny\nz\n"), after = program("x\nY\nz\n");
    ProgramReference ref{"side A", {"mosaic k", "stablehlo"}, {"sha-x\ny\nz\n", "sha-hlo"},
                         [&](const std::string &sha) -> std::optional<std::string> {
                             if (sha == before.parts[0].sha256) return before.parts[0].text;
                             return std::nullopt;
                         }};
    CHECK(program_check(before, ref, true, "").as<ProgramMetrics>().status == ProgramStatus::Identical);
    const CheckResult changed = program_check(after, ref, false, "");
    CHECK(changed.verdict == Verdict::Pass);
    const auto &m = changed.as<ProgramMetrics>();
    CHECK(m.status == ProgramStatus::Changed);
    CHECK(*m.changed_parts == std::vector<std::string>{"mosaic k"});
    CHECK(*m.lines_added == 1);
    CHECK(m.diff->find("-y\n+Y\n") != std::string::npos);
    CHECK(changed.reason == "TPU program changed against side A: mosaic k (+1 -1 lines)");
    CHECK(program_check(after, ref, true, "").verdict == Verdict::Fail);
    CHECK(program_check(after, std::nullopt, false, "no baseline").as<ProgramMetrics>().status == ProgramStatus::NoReference);
}

TEST_CASE("program_check pairs a renamed Mosaic body with the old one (jax 0.7 calls every body main)") {
    const ProgramObservation now = program("x\ny\nz\n");
    ProgramReference ref{"side A", {"mosaic main", "stablehlo"}, {"sha-x\ny\nz\n", "sha-hlo"}, {}};
    CHECK(program_check(now, ref, false, "").as<ProgramMetrics>().status == ProgramStatus::Identical);
    ref.sha256[0] = "sha-old";
    ref.text_of = [](const std::string &) -> std::optional<std::string> { return std::string("x\nw\nz\n"); };
    const CheckResult changed = program_check(now, ref, false, "");
    CHECK(*changed.as<ProgramMetrics>().changed_parts == std::vector<std::string>{"mosaic main -> mosaic k"});
    CHECK(*changed.as<ProgramMetrics>().lines_added == 1);
}

namespace {
// What the JAX adapter's contract.py reports, in its format.
std::string race(const std::string &signature) {
    return "TPU interpreter: data race on 2 simulated cores (seed 36), race `" + signature +
           "` (1 time): write of ('hbm', 103, 0, 0)[(slice(0, 128, 1),)] from 0, 1, pallas_call clock: [0 35 0 0]";
}
const std::string kScratch = "write/write on output 0 of pallas_call fwd, which the caller discards";
const std::vector<KnownRace> kKnown{{"splash", kScratch, "a scratch output the caller drops", "ana, 2026-12-05"}};
}  // namespace

TEST_CASE("race_signature reads the signature between backticks of a race, nothing else") {
    CHECK(race_signature(race(kScratch)) == kScratch);
    CHECK(race_signature("TPU interpreter: JaxRuntimeError: IndexError: Out-of-bounds read of `x`") == "");
    CHECK(race_signature("TPU interpreter: data race on 2 simulated cores (seed 36), race unparsed (no message)") == "");
}

TEST_CASE("interpreter_contract_check: a reviewed race passes with its reason kept, any other violation fails") {
    const CheckResult none = interpreter_contract_check({}, "splash", kKnown);
    CHECK(none.verdict == Verdict::Pass);
    CHECK_THAT(none.reason, Catch::Contains("no race on 2 simulated cores"));

    const CheckResult known = interpreter_contract_check({race(kScratch)}, "splash", kKnown);
    CHECK(known.verdict == Verdict::Pass);
    CHECK_THAT(known.reason, Catch::Contains("1 known race the suite lists as reviewed") && Catch::Contains(kScratch));
    const auto &m = std::get<ContractMetrics>(known.metrics);
    REQUIRE(m.known_races);
    CHECK(*m.known_races == std::vector<std::string>{kScratch + ": a scratch output the caller drops (reviewed: ana, 2026-12-05)"});
    CHECK(m.violations->empty());

    // The same race in another kernel, another output of this one, the returned output, and an
    // out-of-bounds read beside the known race: each fails, named.
    for (const auto &[kernel, violations] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"flash", {race(kScratch)}},
             {"splash", {race("write/write on output 1 of pallas_call fwd, which the caller discards")}},
             {"splash", {race("write/write on output 0 of pallas_call fwd")}},
             {"splash", {race(kScratch), "TPU interpreter: JaxRuntimeError: IndexError: Out-of-bounds read of (0 0 vmem 102)"}}}) {
        const CheckResult r = interpreter_contract_check(violations, kernel, kKnown);
        CHECK(r.verdict == Verdict::Fail);
        CHECK_THAT(r.reason, Catch::Contains(violations.back()));
        CHECK(std::get<ContractMetrics>(r.metrics).violations->size() == (kernel == "splash" && violations.size() == 2 ? 1u : violations.size()));
    }
    // A race whose signature could not be read never matches.
    CHECK(interpreter_contract_check({"TPU interpreter: data race on 2 simulated cores (seed 36), race unparsed"}, "splash",
                                     {{"splash", "", "r", "ana"}})
              .verdict == Verdict::Fail);
}
