// The typed check results at the file boundary: each check's record written under its
// members' names in their order, read back with every field's type checked, and the keys no
// record names kept as extras.
#include <catch2/catch.hpp>

#include <cmath>

#include "checks/golden_check.hpp"
#include "run/perf_baselines.hpp"
#include "store/baseline_update.hpp"
#include "store/directory_store.hpp"
#include "store/keys.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {

RunResults one_check(CheckResult c) {
    CaseResult r;
    r.case_id = "a";
    r.kernel = "flash";
    const CheckName name = c.check();
    r.checks.push_back(std::move(c));
    RunResults out = test::results_with({r});
    out.checks = {name};
    return out;
}

/// results.json text with the first check's metrics replaced by `metrics`.
json::value with_metrics(const std::string &check, const json::object &metrics) {
    json::value doc = to_json(one_check(CheckResult(*parse_enum<CheckName>(check))));
    doc.at("results").at(0).at("checks").at(0).as_object()["metrics"] = metrics;
    return doc;
}

std::string read_error(const json::value &doc) {
    auto r = results_from_json(doc, "r.json");
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::BadInput);
    return r.error().message;
}

}  // namespace

TEST_CASE("a check's record is written in member order, without what was not measured", "[results]") {
    PerfMetrics m;
    m.median_s = 2e-3;
    m.samples_s = {1e-3, 2e-3, 3e-3};
    m.ratio = NAN;  // computed, but not a number: null
    m.status = PerfCheckStatus::TooNoisy;
    m.mode = PerfMode::Calibrated;
    const json::object out = metrics_json(CheckResult(m, Verdict::Skip, "noisy"));
    CHECK(json::serialize(out) == R"({"samples_s":[1E-3,2E-3,3E-3],"median_s":2E-3,"ratio":null,"status":"too_noisy","mode":"calibrated"})");
}

TEST_CASE("every check's record survives results.json unchanged", "[results]") {
    GoldenMetrics g;
    g.max_abs_error = 1e-7, g.tolerance = 2e-7, g.margin = 0.5, g.rms_tolerance = NAN, g.worst_index = 3, g.worst_coords = "[0, 0, 0, 3]";
    g.error_map = ErrorMap{1, 2, 8, 4, "sequence position", "value head dim", "max abs", {{0.5, std::nullopt}}};
    NumericsMetrics n;
    n.sha256 = "ab", n.elements = 2, n.sample_bits = std::vector<uint32_t>{0, 4294967295u}, n.max_ulp = std::optional<int64_t>{};
    n.status = NumericsStatus::Changed;
    MemoryMetrics mem;
    mem.calls = 10, mem.heap_live_bytes = std::vector<int64_t>{1, 2}, mem.leak_bytes_per_call = 0.5;
    InstructionsMetrics ins;
    ins.instructions = 1e6, ins.status = PerfCheckStatus::NoBaseline;
    CheckResult crashed(CheckName::Memory, Verdict::Error, "crashed");
    crashed.crash = CrashRecord{"crash", 0.25, "tail", "SIGSEGV", std::nullopt, std::nullopt};
    for (const CheckResult &c : {CheckResult(g), CheckResult(n), CheckResult(mem), CheckResult(ins), crashed,
                                 CheckResult(ContractMetrics{std::vector<std::string>{"wrote q"}, std::nullopt}, Verdict::Fail)}) {
        const json::value written = to_json(one_check(c));
        auto back = results_from_json(written, "r.json");
        REQUIRE(back);
        CHECK(back->results.at(0).checks.at(0).check() == c.check());
        CHECK(json::serialize(to_json(*back)) == json::serialize(written));
    }
}

TEST_CASE("a wrongly typed metric is bad input naming the file and the JSON path", "[results]") {
    CHECK_THAT(read_error(with_metrics("golden", {{"worst_index", 1.5}})),
               Catch::Contains("r.json: $.results[0].checks[0].metrics.worst_index: expected an integer, got a number"));
    CHECK_THAT(read_error(with_metrics("perf", {{"samples_s", json::array{1e-3, "fast"}}})),
               Catch::Contains("$.results[0].checks[0].metrics.samples_s[1]: expected a number, got a string"));
    CHECK_THAT(read_error(with_metrics("perf", {{"status", "slow"}})),
               Catch::Contains(".metrics.status: expected one of \"ok\", \"regression\"") && Catch::Contains("got \"slow\""));
    CHECK_THAT(read_error(with_metrics("numerics", {{"sample_bits", json::array{-1}}})),
               Catch::Contains(".metrics.sample_bits[0]: expected an integer in [0, 4294967295], got -1"));
    CHECK_THAT(read_error(with_metrics("golden", {{"error_map", json::object{{"rows", 1}, {"colour", "red"}}}})),
               Catch::Contains(".metrics.error_map.colour: unknown field"));
    CHECK_THAT(read_error(with_metrics("memory", {{"crash", json::object{{"kind", 3}}}})),
               Catch::Contains(".metrics.crash.kind: expected a string, got an integer"));
    json::value doc = with_metrics("perf", {});
    doc.at("results").at(0).at("checks").at(0).as_object()["check"] = "speed";
    CHECK_THAT(read_error(doc), Catch::Contains("$.results[0].checks[0].check: expected one of \"golden\"") && Catch::Contains("got \"speed\""));
}

TEST_CASE("metrics no record names are kept and written back after the record's", "[results]") {
    auto back = results_from_json(with_metrics("cost", {{"kv_bytes_per_s", 5.0}, {"usd_per_million_tokens", 0.25}}), "r.json");
    REQUIRE(back);
    const CheckResult &c = back->results.at(0).checks.at(0);
    CHECK(c.as<CostMetrics>().usd_per_million_tokens == 0.25);
    CHECK(json::serialize(c.extras) == R"({"kv_bytes_per_s":5E0})");
    CHECK(json::serialize(metrics_json(c)) == R"({"usd_per_million_tokens":2.5E-1,"kv_bytes_per_s":5E0})");
}

TEST_CASE("a golden check whose error is infinite still writes a results file that reads back", "[results]") {
    // An all-zero golden and a non-zero output: nmse = inf, which JSON cannot hold (Boost.JSON
    // wrote "Infinity", which no reader parses). Not a number: null.
    const std::vector<double> want(4, 0.0);
    const std::vector<float> got = {1.0f, 0.0f, 0.0f, 0.0f};
    GoldenEntry e;
    e.shape = {1, 1, 1, 4};
    const CheckResult g = golden_check(got, want, e);
    REQUIRE(std::isinf(*g.as<GoldenMetrics>().nmse));
    auto parsed = parse_json(pretty_json(to_json(one_check(g))), "r.json");
    REQUIRE(parsed);
    auto back = results_from_json(*parsed, "r.json");
    REQUIRE(back);
    CHECK(std::isnan(*back->results[0].checks[0].as<GoldenMetrics>().nmse));
}

TEST_CASE("a baseline keeps the namesakes of its check's metrics", "[results][baseline]") {
    PerfMetrics m;
    m.samples_s = {1e-3}, m.median_s = 1e-3, m.ratio = 1.1, m.calibration_workload = "w";
    const auto kept = baseline_values_of(CheckResult(m));
    REQUIRE(kept);
    const PerfBaseline &b = std::get<PerfBaseline>(*kept);
    CHECK(b.samples_s == m.samples_s);
    CHECK(b.calibration_workload == "w");
    CHECK(json::serialize(to_json_object(b)) == R"({"samples_s":[1E-3],"median_s":1E-3,"calibration_workload":"w"})");
    CHECK_FALSE(baseline_values_of(CheckResult(CheckName::Golden)));  // golden keeps no baseline
}

TEST_CASE("the perf-baseline state comes from the store, not from a message", "[results][perf]") {
    test::TempDir dir;
    DirectoryStore store(dir.path());
    Suite suite;
    suite.name = "s";
    auto none = PerfBaselines::load(store, suite, "small");
    REQUIRE(none);
    CHECK(none->state("a", "flash") == PerfBaselineState::Missing);
    BaselineFile other{CheckName::Perf, "s", "big", {BaselineEntry{"a", "flash", PerfBaseline{}, {}, {}}}, ""};
    REQUIRE(save_baseline_file(store, *baseline_key(CheckName::Perf, "s", "big"), other));
    auto elsewhere = PerfBaselines::load(store, suite, "small");
    REQUIRE(elsewhere);
    CHECK(elsewhere->state("a", "flash") == PerfBaselineState::OtherMachine);
    CHECK_THAT(elsewhere->missing_note("a", "flash"), Catch::Contains("recorded on machine class \"big\", this is \"small\""));
    PerfBaseline timed;
    timed.samples_s = Seconds{1e-3, 1e-3};
    BaselineFile here{CheckName::Perf, "s", "small", {BaselineEntry{"a", "flash", timed, {}, {}}}, ""};
    REQUIRE(save_baseline_file(store, *baseline_key(CheckName::Perf, "s", "small"), here));
    auto mine = PerfBaselines::load(store, suite, "small");
    REQUIRE(mine);
    CHECK(mine->state("a", "flash") == PerfBaselineState::Present);
    CHECK(mine->state("b", "flash") == PerfBaselineState::Missing);
    CHECK_THAT(mine->missing_note("b", "flash"), Catch::Contains("no perf baseline for b / flash on machine class \"small\""));
}

TEST_CASE("a baseline value of the wrong type is bad input naming its path", "[results][baseline]") {
    const std::string text = R"({"schema_version": 1, "check": "perf", "suite": "s", "machine_class": "m",
        "entries": [{"case": "a", "kernel": "k", "values": {"calibration_s": [1e-3, "fast"]}, "provenance": {}}]})";
    auto f = parse_baseline_file(text, "b.json");
    REQUIRE_FALSE(f);
    CHECK_THAT(f.error().message, Catch::Contains("b.json: $.entries[0].values.calibration_s[1]: expected a number, got a string"));
    auto golden = parse_baseline_file(R"({"schema_version": 1, "check": "golden", "suite": "s", "entries": []})", "g.json");
    REQUIRE_FALSE(golden);
    CHECK_THAT(golden.error().message, Catch::Contains("g.json: $.check: expected a check that keeps baselines"));
}

TEST_CASE("a workload's projection is typed too: written in order, a wrong type is bad input", "[results][cost]") {
    RunResults r = one_check(CheckResult(CheckName::Cost, Verdict::Pass));
    WorkloadResult w;
    w.workload = "chat", w.monthly_cost = 10.5, w.change_pct = INFINITY, w.verdict = Verdict::Fail, w.reason = "over budget";
    r.workloads.push_back(w);
    CHECK(r.verdict() == Verdict::Fail);  // the cost gate fails per workload
    json::value doc = to_json(r);
    CHECK(json::serialize(doc.at("workloads")) == R"([{"workload":"chat","monthly_cost":1.05E1,"change_pct":null,"verdict":"fail","reason":"over budget"}])");
    auto back = results_from_json(doc, "r.json");
    REQUIRE(back);
    CHECK(back->workloads.at(0).failed());
    doc.at("workloads").at(0).as_object()["monthly_cost"] = "ten";
    CHECK_THAT(read_error(doc), Catch::Contains("r.json: $.workloads[0].monthly_cost: expected a number or null, got a string"));
}
