// Sharding, merging and history: the balanced partition, merge's refusals and its
// run-wide Benjamini-Hochberg pass, history records and trend attribution.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <catch2/catch.hpp>

#include "plan/shard.hpp"
#include "results/history_record.hpp"
#include "results/trends.hpp"
#include "run/merge.hpp"
#include "run/perf_windows.hpp"
#include "store/directory_store.hpp"
#include "store/history.hpp"
#include "test_support.hpp"

using namespace attngate;

TEST_CASE("shard option parses I/N", "[shard]") {
    CHECK(parse_shard("2/4")->index == 2);
    CHECK(parse_shard("2/4")->count == 4);
    for (const char *bad : {"0/4", "5/4", "1", "a/b", "1/0", "1/4x"}) CHECK_FALSE(parse_shard(bad));
}

TEST_CASE("the partition is deterministic and balanced", "[shard]") {
    const std::vector<double> costs = {5, 1, 1, 1, 1, 3, 2, 2, 4, 4};
    const auto p = balanced_partition(costs, 3);
    CHECK(p == balanced_partition(costs, 3));
    std::vector<double> load(3, 0.0);
    for (size_t i = 0; i < costs.size(); ++i) load[static_cast<size_t>(p[i])] += costs[i];
    // 24 in all: LPT gives 8, 8, 8.
    CHECK(load == std::vector<double>{8, 8, 8});
    CHECK(balanced_partition({1, 1}, 4) == std::vector<int>{0, 1});
}

namespace {

/// A perf check against a baseline as a shard records it; a slowdown comes with its
/// second timing (the perf phase times every regression again), slowed by `again`
/// (default: the same), or none (`again` NaN).
CheckResult perf_vs_baseline(double slowdown, const char *stream, std::optional<double> again = std::nullopt) {
    PerfMetrics m;
    m.samples_s = test::jittered_times(1.0 + slowdown, 0.01, 12, stream);
    m.baseline_samples_s = test::jittered_times(1.0, 0.01, 12, (std::string(stream) + "b").c_str());
    m.threshold_pct = 5.0;
    const double second = again.value_or(slowdown);
    if (slowdown > 0 && !std::isnan(second)) m.reproduction_samples_s = test::jittered_times(1.0 + second, 0.01, 12, (std::string(stream) + "r").c_str());
    return CheckResult(m, Verdict::Pass, "");
}

RunResults shard(int index, int count, std::vector<std::string> mine, std::vector<std::string> plan) {
    RunResults r;
    r.suite = "s";
    r.complete = true;
    r.fingerprint = json::object{{"lib", "1.0"}};
    json::array p, m;
    for (const auto &u : plan) p.push_back(json::string(u));
    for (const auto &u : mine) {
        m.push_back(json::string(u));
        CaseResult c;
        c.case_id = u.substr(0, u.find('/'));
        c.kernel = u.substr(u.find('/') + 1);
        r.results.push_back(std::move(c));
    }
    r.shard = json::object{{"index", index}, {"count", count}, {"unit", "case/kernel"}, {"plan", p}, {"mine", m}, {"seed", 1}, {"alpha", 0.01}};
    return r;
}

}  // namespace

TEST_CASE("merge puts shards back in plan order and names what is missing", "[merge]") {
    const std::vector<std::string> plan = {"a/k", "b/k", "c/k", "d/k"};
    auto merged = merge_shards({{"s2.json", shard(2, 2, {"b/k", "d/k"}, plan)}, {"s1.json", shard(1, 2, {"a/k", "c/k"}, plan)}}, {});
    REQUIRE(merged);
    REQUIRE(merged->results.size() == 4);
    CHECK(merged->results[0].case_id == "a");
    CHECK(merged->results[3].case_id == "d");
    CHECK(merged->shard.empty());

    auto missing = merge_shards({{"s1.json", shard(1, 3, {"a/k"}, plan)}, {"s3.json", shard(3, 3, {"c/k"}, plan)}}, {});
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message, Catch::Contains("missing shard(s) 2 of 3"));

    auto twice = merge_shards({{"x.json", shard(1, 2, {"a/k", "b/k"}, plan)}, {"y.json", shard(2, 2, {"b/k", "c/k", "d/k"}, plan)}}, {});
    REQUIRE_FALSE(twice);
    CHECK_THAT(twice.error().message, Catch::Contains("x.json and y.json both ran b/k"));

    RunResults other = shard(2, 2, {"b/k", "d/k"}, plan);
    other.fingerprint["lib"] = "2.0";
    auto fp = merge_shards({{"s1.json", shard(1, 2, {"a/k", "c/k"}, plan)}, {"s2.json", other}}, {});
    REQUIRE_FALSE(fp);
    CHECK_THAT(fp.error().message, Catch::Contains("fingerprint differs") && Catch::Contains("lib: 1.0 → 2.0") && Catch::Contains("--force"));
    CHECK(merge_shards({{"s1.json", shard(1, 2, {"a/k", "c/k"}, plan)}, {"s2.json", other}}, {true}));

    RunResults suite_b = shard(2, 2, {"b/k", "d/k"}, plan);
    suite_b.suite = "t";
    CHECK_FALSE(merge_shards({{"s1.json", shard(1, 2, {"a/k", "c/k"}, plan)}, {"s2.json", suite_b}}, {true}));
    RunResults plain;
    plain.suite = "s";
    CHECK_THAT(merge_shards({{"p.json", plain}}, {}).error().message, Catch::Contains("not the results of a shard"));
}

TEST_CASE("A/B shards of other CPUs merge; their libraries still must match", "[merge]") {
    // Each A/B shard decides its pairs on one machine, so runners of different CPUs (GitHub's
    // matrix) are fine; another library version is not. Run shards still need one machine.
    const std::vector<std::string> plan = {"a/k", "b/k"};
    const auto ab_shard = [&](int i, std::vector<std::string> mine, const char *cpu, const char *lib, const char *host) {
        RunResults r = shard(i, 2, std::move(mine), plan);
        r.fingerprint["cpu"] = json::object{{"model", cpu}};
        r.fingerprint["lib"] = lib;
        r.ab = json::object{{"a", "base/attngate"}, {"b", "head/attngate"}};
        r.host_name = host;
        return r;
    };
    auto merged = merge_shards({{"s1.json", ab_shard(1, {"a/k"}, "EPYC", "1.0", "runner-1")},
                                {"s2.json", ab_shard(2, {"b/k"}, "Xeon", "1.0", "runner-2")}}, {});
    REQUIRE(merged);
    CHECK(merged->ab.at("b").as_string() == "head/attngate");
    CHECK(merged->host_name.empty());  // two machines: no one host
    auto bumped = merge_shards({{"s1.json", ab_shard(1, {"a/k"}, "EPYC", "1.0", "r")}, {"s2.json", ab_shard(2, {"b/k"}, "Xeon", "2.0", "r")}}, {});
    REQUIRE_FALSE(bumped);
    CHECK_THAT(bumped.error().message, Catch::Contains("lib: 1.0 → 2.0") && !Catch::Contains("cpu.model"));
    RunResults run1 = ab_shard(1, {"a/k"}, "EPYC", "1.0", "r"), run2 = ab_shard(2, {"b/k"}, "Xeon", "1.0", "r");
    run1.ab = run2.ab = {};
    auto runs = merge_shards({{"s1.json", run1}, {"s2.json", run2}}, {});
    REQUIRE_FALSE(runs);
    CHECK_THAT(runs.error().message, Catch::Contains("cpu.model: EPYC → Xeon"));
}

TEST_CASE("merge applies Benjamini-Hochberg over every shard's comparisons together", "[merge]") {
    // One clear 20% regression among many unchanged cases: alone in its shard it is one
    // comparison; merged it is one of many, and BH raises its adjusted p accordingly.
    RunResults r;
    r.results.resize(30);
    for (size_t i = 0; i < r.results.size(); ++i) {
        r.results[i].case_id = "c" + std::to_string(i);
        r.results[i].checks.push_back(perf_vs_baseline(i == 0 ? 0.2 : 0.0, ("s" + std::to_string(i)).c_str()));
    }
    RunResults alone;
    alone.results = {r.results[0]};
    REQUIRE(redecide_perf(alone, 0.01) == 1);
    const double p_alone = *alone.results[0].checks[0].as<PerfMetrics>().p_adjusted;
    REQUIRE(redecide_perf(r, 0.01) == 30);
    const PerfMetrics &m = r.results[0].checks[0].as<PerfMetrics>();
    CHECK(m.status == PerfCheckStatus::Regression);
    CHECK(*m.p_adjusted > p_alone);
    CHECK(*m.p_adjusted == Approx(30 * *m.p_value));
    CHECK(r.results[0].checks[0].verdict == Verdict::Fail);
    CHECK(r.results[5].checks[0].verdict == Verdict::Pass);
}

TEST_CASE("merge keeps a regression only where its second timing reproduces it", "[merge]") {
    const auto merged_status = [](CheckResult c) {
        RunResults r;
        r.results.resize(1);
        r.results[0].case_id = "a";
        r.results[0].checks.push_back(std::move(c));
        REQUIRE(redecide_perf(r, 0.01) == 1);
        return std::pair(std::string(enum_name(*r.results[0].checks[0].as<PerfMetrics>().status)), r.results[0].checks[0].reason);
    };
    const auto [reproduced, why] = merged_status(perf_vs_baseline(0.2, "x"));
    CHECK(reproduced == "regression");
    CHECK_THAT(why, Catch::Contains("reproduced in a second timing: median time x1.2"));
    const auto [gone, why_gone] = merged_status(perf_vs_baseline(0.2, "x", 0.0));  // the second timing saw nothing
    CHECK(gone == "machine_moved");
    CHECK_THAT(why_gone, Catch::StartsWith("not gated: a regression in the first timing (median time x1.2") &&
                             Catch::Contains("did not reproduce in a second timing (ok:"));
    const auto [unrecorded, why_none] = merged_status(perf_vs_baseline(0.2, "x", std::nan("")));
    CHECK(unrecorded == "too_noisy");  // never timed again: nothing says the machine moved
    CHECK_THAT(why_none, Catch::Contains("none was recorded"));
    // A paired A/B row has no second timing to ask for: its pairs are the reproduction.
    CheckResult ab = perf_vs_baseline(0.2, "x", std::nan(""));
    PerfMetrics &paired = ab.as<PerfMetrics>();
    paired.mode = PerfMode::Ab;
    paired.baseline_samples_s = paired.samples_s;
    for (auto &x : *paired.samples_s) x *= 1.2;
    CHECK(merged_status(ab).first == "regression");
}

namespace {
RunResults run_at(const std::string &at, double median, const std::string &lib) {
    RunResults r;
    r.suite = "s";
    r.complete = true;
    r.machine_class = "box (cpu x2)";
    r.started_at = at;
    r.fingerprint = json::object{{"lib", lib}};
    CaseResult c;
    c.case_id = "a";
    c.kernel = "flash";
    PerfMetrics perf;
    perf.samples_s = {median * 0.99, median, median * 1.01, median, median, median * 1.002};
    c.checks.emplace_back(perf, Verdict::Pass, "");
    MemoryMetrics mem;
    mem.abi_peak_bytes = 4096;
    c.checks.emplace_back(mem, Verdict::Pass, "");
    r.results.push_back(c);
    return r;
}
}  // namespace

TEST_CASE("history records are compact and read back", "[history]") {
    const RunResults r = run_at("2026-03-01T02:00:00Z", 0.0123456789, "1.0");
    const HistoryRecord rec = history_record(r, "id1");
    const std::string line = serialize_history_record(rec);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.size() < 300);
    auto back = parse_history_record(line, "h.json");
    REQUIRE(back);
    REQUIRE(back->rows.size() == 1);
    CHECK(*back->rows[0].median_s == Approx(0.012346).epsilon(1e-4));
    CHECK(*back->rows[0].peak_bytes == 4096);
    CHECK(back->rows[0].verdicts.at("perf") == "p");
    CHECK(back->machine_class == "box (cpu x2)");
    // A perf window's figures: the fastest repetition, no calibration or threads where the run had none.
    CHECK(*back->rows[0].fastest_s == Approx(0.0123456789 * 0.99).epsilon(1e-4));
    CHECK_FALSE(back->rows[0].calibration_fastest_s);
    CHECK_FALSE(back->timing_threads);
}

TEST_CASE("a history record keeps what a perf window reads: fastest times and the threads", "[history]") {
    RunResults r = run_at("2026-03-01T02:00:00Z", 0.002, "1.0");
    PerfMetrics &perf = r.results[0].checks[0].as<PerfMetrics>();
    perf.calibration_s = {2.4e-4, 1.1e-4, 2.2e-4};
    perf.calibration_workload = "sgemm";
    perf.threads = 1;
    auto back = parse_history_record(serialize_history_record(history_record(r, "id1")), "h.json");
    REQUIRE(back);
    CHECK(*back->rows[0].fastest_s == Approx(0.002 * 0.99).epsilon(1e-4));
    CHECK(*back->rows[0].calibration_fastest_s == Approx(1.1e-4).epsilon(1e-4));
    CHECK(*back->rows[0].calibration_s == Approx(2.2e-4).epsilon(1e-4));
    CHECK(back->timing_threads == 1);
    CHECK(back->calibration_workload == "sgemm");
    const auto bad = parse_history_record(R"({"schema":1,"run":"r","at":"t","suite":"s","th":-1,"rows":[]})", "h.json");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("h.json") && Catch::Contains("th"));
}

namespace {
/// A run of two rows, "a" and "b", judged by the window rule on one thread; row b's status is
/// `b_status`, judged in `b_mode`, with a second timing when `second_timing`.
RunResults windowed_run(int i, PerfCheckStatus b_status, PerfMode b_mode = PerfMode::Window, bool second_timing = false) {
    RunResults r = run_at(fmt::format("2026-03-01T02:00:{:02d}Z", i), 0.002 * (1 + 0.001 * i), "1.0");
    r.results.push_back(r.results[0]);
    r.results[1].case_id = "b";
    for (auto &c : r.results) {
        PerfMetrics &p = c.checks[0].as<PerfMetrics>();
        p.calibration_s = {1.1e-4, 1.2e-4};
        p.calibration_workload = "sgemm";
        p.threads = 1;
        p.mode = PerfMode::Window;
        p.status = PerfCheckStatus::Ok;
    }
    PerfMetrics &b = r.results[1].checks[0].as<PerfMetrics>();
    b.mode = b_mode, b.status = b_status;
    if (second_timing) b.reproduction_status = PerfStatus::Ok;
    return r;
}
}  // namespace

TEST_CASE("a row the window rule found beyond its window stays out of it until accepted", "[history][window]") {
    using enum PerfCheckStatus;
    const auto marked = [](const RunResults &r) {
        auto back = parse_history_record(serialize_history_record(history_record(r, "id")), "h.json");
        REQUIRE(back);
        return back->rows[1].outside_window;
    };
    CHECK_FALSE(marked(windowed_run(0, Ok)));
    CHECK_FALSE(marked(windowed_run(0, TooNoisy)));
    CHECK(marked(windowed_run(0, Regression)));
    CHECK(marked(windowed_run(0, TooNoisy, PerfMode::Window, true)));  // a first-timing regression that did not reproduce
    CHECK(marked(windowed_run(0, StaleBaseline)));
    CHECK(marked(windowed_run(0, Improvement)));
    CHECK_FALSE(marked(windowed_run(0, Regression, PerfMode::Calibrated)));  // judged by a single-run baseline
    CHECK(serialize_history_record(history_record(windowed_run(0, Regression), "id")).find(R"("x":1)") != std::string::npos);

    test::TempDir dir;
    DirectoryStore store(dir.path());
    for (int i = 0; i < 6; ++i) REQUIRE(append_history(store, windowed_run(i, Ok)));
    const RunResults slow = windowed_run(6, Regression);
    REQUIRE(append_history(store, slow));
    auto w = PerfWindows::load(store, "s", "box (cpu x2)", "sgemm", 1);
    REQUIRE(w);
    CHECK(w->of("a", "flash").size() == 7);
    CHECK(w->of("b", "flash").size() == 6);  // the regression's time is not in b's window
    // Accepting it starts b's window at that run.
    REQUIRE(append_perf_window(store, slow, {"a/flash", "b/flash"}));
    w = PerfWindows::load(store, "s", "box (cpu x2)", "sgemm", 1);
    REQUIRE(w);
    CHECK(w->of("a", "flash").size() == 7);
    CHECK(w->of("b", "flash").size() == 1);
}

TEST_CASE("run ids of runs started in the same second sort in the order they were appended", "[history]") {
    // The start time has whole seconds: two quick runs (a retry) used to sort by their
    // random suffix, so the history's order and its fingerprint markers were a coin toss.
    std::vector<std::string> ids;
    for (int i = 0; i < 50; ++i) ids.push_back(new_run_id("2026-03-01T02:00:00Z"));
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == ids.size());
    CHECK(ids.front().starts_with("20260301T020000Z-"));
    CHECK(new_run_id("2026-03-01T01:59:59Z") < ids.front());  // the start time still sorts first
}

TEST_CASE("a step in the history is found and attributed to the fingerprint change", "[history]") {
    test::TempDir dir;
    DirectoryStore store(dir.path());
    for (int i = 0; i < 40; ++i) {
        const double noise = 1.0 + 0.004 * ((i * 7) % 5 - 2);
        const bool after = i >= 25;
        const auto at = fmt::format("2026-03-{:02d}T{:02d}:00:00Z", 1 + i / 2, (i % 2) * 12);
        REQUIRE(append_history(store, run_at(at, 0.01 * noise * (after ? 1.03 : 1.0), after ? "2.0" : "1.0")));
    }
    auto h = load_history(store, "s", "box (cpu x2)", 0);
    REQUIRE(h);
    REQUIRE(h->records.size() == 40);
    CHECK(h->fingerprints.size() == 2);
    CHECK(load_history(store, "s", "box (cpu x2)", 10)->records.size() == 10);
    const TrendReport t = analyze_trends(h->records, h->fingerprints);
    REQUIRE(t.shifts.size() == 1);
    CHECK(t.shifts[0].run == 25);
    CHECK(t.shifts[0].changes == std::vector<std::string>{"lib: 1.0 → 2.0"});
    const SeriesTrend *s = t.find("a", "flash", HistoryFigure::MedianS);
    REQUIRE(s);
    REQUIRE(s->changes.size() == 1);
    CHECK(s->changes[0].run == 25);
    CHECK(s->changes[0].shift == std::optional<size_t>(0));
    CHECK_THAT(describe_change(t, *s, s->changes[0]), Catch::Contains("+3.0%") && Catch::Contains("lib: 1.0 → 2.0"));
    CHECK(t.find("a", "flash", HistoryFigure::PeakBytes)->changes.empty());
}
