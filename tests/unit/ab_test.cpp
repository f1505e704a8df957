// run_ab's sequential rounds, on two synthetic sides: a row the first rounds already place
// against the threshold stops there; a row they cannot place gets more rounds until it is
// placed or max_rounds is reached; the verdict is taken on every pair it got. And the closing
// line of `ab`, which must say what its exit code says.
#include <cmath>
#include <map>

#include <catch2/catch.hpp>

#include "run/ab.hpp"
#include "store/directory_store.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {

const char *kSuite = R"({"name": "abunit", "seed": 5, "kernels": ["flash"],
  "cases": [
    {"id": "steady", "seq_q": 16, "heads_q": 1, "head_dim": 8},
    {"id": "slower", "seq_q": 16, "heads_q": 1, "head_dim": 8},
    {"id": "chaotic", "seq_q": 16, "heads_q": 1, "head_dim": 8}
  ]})";

/// Per case: B's time over A's, and the relative jitter of each pair's ratio.
struct RowModel {
    double ratio, jitter;
};
const std::map<std::string, RowModel> kRows = {
    {"steady", {1.0, 0.005}},  // placed within the threshold after the first rounds
    {"slower", {1.10, 0.08}},  // a 10% slowdown whose pairs are too noisy for 21 rounds
    {"chaotic", {1.0, 0.9}},   // never placed: runs to max_rounds
};

/// A side whose times are drawn, deterministically, from kRows: A's time is 1 ms (drifting
/// a little by call, as a machine does, shared by both sides of a pair); B's is that times
/// the row's ratio and a jitter. Outputs are equal on both sides.
class SyntheticSide final : public AbSide {
public:
    /// whole_rounds: like a build older than `time --serve`, it times every row per round.
    SyntheticSide(bool is_b, bool whole_rounds = false) : is_b_(is_b), whole_rounds_(whole_rounds) {}
    std::string describe() const override { return is_b_ ? "synthetic B" : "synthetic A"; }
    Result<std::map<AbLabel, double>> round(const AbRoundOptions &o) override {
        if (!whole_rounds_) return fail(ErrorKind::Infra, "this synthetic side times row by row");
        std::map<AbLabel, double> out;
        for (const auto &[id, m] : kRows) out[{id, "flash"}] = *time_row({id, "flash"}, o);
        return out;
    }
    Result<std::vector<AbLabel>> rows(const AbRoundOptions &) override {
        std::vector<AbLabel> out;
        if (!whole_rounds_)
            for (const auto &[id, m] : kRows) out.push_back({id, "flash"});
        return out;
    }
    Result<double> time_row(const AbLabel &label, const AbRoundOptions &) override {
        const int n = calls_[label.first]++;
        const double machine = 1e-3 * (1.0 + 0.2 * ((n * 7) % 11) / 11.0);
        if (!is_b_) return machine;
        const RowModel &m = kRows.at(label.first);
        const auto jitter = test::jittered_times(1.0, m.jitter, n + 1, label.first.c_str());
        return machine * m.ratio * jitter.back();
    }
    Result<std::map<AbLabel, AbOutput>> outputs(const AbRoundOptions &) override {
        std::map<AbLabel, AbOutput> out;
        for (const auto &[id, m] : kRows) out[{id, "flash"}].values = std::vector<float>(16 * 8, 0.5f);
        return out;
    }
    int calls(const std::string &id) const { return calls_.contains(id) ? calls_.at(id) : 0; }

private:
    bool is_b_, whole_rounds_;
    std::map<std::string, int> calls_;
};

/// The perf check's pair count and status of each case.
std::map<std::string, std::pair<int, std::string>> perf_of(const RunResults &r) {
    std::map<std::string, std::pair<int, std::string>> out;
    for (const auto &c : r.results)
        if (const PerfMetrics *m = find_metrics<PerfMetrics>(c)) out[c.case_id] = {static_cast<int>(*m->repetitions), enum_name(*m->status)};
    return out;
}

}  // namespace

TEST_CASE("sequential A/B rounds: more pairs only for the rows that need them", "[ab]") {
    test::TempDir dir;
    test::write_text(dir / "abunit.json", kSuite);
    auto suite = load_suite(dir / "abunit.json");
    REQUIRE(suite);
    DirectoryStore store(dir / "baselines");
    AbOptions o;
    o.store = &store;
    o.rounds = 21;
    o.max_rounds = 61;
    o.profiles_dir.clear();

    SECTION("each row gets what its verdict needs") {
        SyntheticSide a(false), b(true);
        AbProgress last;
        bool steps_in_order = true;
        auto r = run_ab(*suite, a, b, o, [&](const AbProgress &p) {
            steps_in_order = steps_in_order && p.done >= last.done && p.done <= p.total;
            last = p;
        });
        REQUIRE(r);
        const auto perf = perf_of(*r);
        REQUIRE(perf.size() == 3);
        CHECK(perf.at("steady") == std::pair{21, std::string("ok")});
        // The slowdown is not placed by 21 pairs, and is a regression once it has more.
        CHECK(perf.at("slower").first > 21);
        CHECK(perf.at("slower").first < 61);
        CHECK((perf.at("slower").first - 21) % 10 == 0);
        CHECK(perf.at("slower").second == "regression");
        CHECK(perf.at("chaotic") == std::pair{61, std::string("too_noisy")});
        // Both sides timed exactly the pairs that were judged.
        for (const auto &[id, got] : perf) {
            CHECK(a.calls(id) == got.first);
            CHECK(b.calls(id) == got.first);
        }
        CHECK(last.round == 61);
        // A step is one row timed on both sides: every pair judged, and none was left planned.
        size_t pairs = 0;
        for (const auto &[id, got] : perf) pairs += static_cast<size_t>(got.first);
        CHECK(last.done == pairs);
        CHECK(last.total == pairs);
        CHECK(steps_in_order);
    }

    SECTION("a side that times whole rounds gets whole rounds while any row is undecided") {
        SyntheticSide a(false, true), b(true, true);
        auto r = run_ab(*suite, a, b, o, {});
        REQUIRE(r);
        const auto perf = perf_of(*r);
        REQUIRE(perf.size() == 3);
        for (const auto &[id, got] : perf) CHECK(got.first == 61);  // "chaotic" keeps every row going
        CHECK(perf.at("steady").second == "ok");
        CHECK(perf.at("slower").second == "regression");
        CHECK(perf.at("chaotic").second == "too_noisy");
    }

    SECTION("fewer rounds than the rule's minimum are not extended: the caller asked for them") {
        o.rounds = 5;
        SyntheticSide a(false), b(true);
        auto r = run_ab(*suite, a, b, o, {});
        REQUIRE(r);
        for (const auto &[id, got] : perf_of(*r)) CHECK(got == std::pair{5, std::string("too_noisy")});  // "too few repetitions"
    }

    SECTION("max_rounds at or below rounds: fixed rounds, and the slowdown stays unplaced") {
        o.max_rounds = 21;
        SyntheticSide a(false), b(true);
        auto r = run_ab(*suite, a, b, o, {});
        REQUIRE(r);
        const auto perf = perf_of(*r);
        for (const auto &[id, got] : perf) CHECK(got.first == 21);
        CHECK(perf.at("slower").second != "regression");
    }
}

namespace {

/// One case x kernel's results with these checks.
CaseResult row_with(std::vector<CheckResult> checks) {
    CaseResult r;
    r.case_id = "c";
    r.kernel = "k";
    r.checks = std::move(checks);
    return r;
}

CheckResult perf_row(PerfCheckStatus status, Verdict v) {
    PerfMetrics m;
    m.status = status;
    return CheckResult(m, v, "");
}

}  // namespace

TEST_CASE("the A/B closing line says what its exit code says", "[ab]") {
    RunResults r;
    r.complete = true;
    SECTION("golden failures with no perf regression are a failure, never \"no regression\"") {
        for (int i = 0; i < 2; ++i)
            r.results.push_back(row_with({CheckResult(CheckName::Golden, Verdict::Fail, "max abs error"), perf_row(PerfCheckStatus::Ok, Verdict::Pass)}));
        REQUIRE(r.verdict() == Verdict::Fail);
        CHECK(ab_verdict_line(r) == "FAILED: golden failed on 2 case x kernel(s)");
    }
    SECTION("a regression, an error and a row too noisy to gate") {
        r.results.push_back(row_with({perf_row(PerfCheckStatus::Regression, Verdict::Fail)}));
        r.results.push_back(row_with({CheckResult(CheckName::Numerics, Verdict::Error, "crashed")}));
        r.results.push_back(row_with({perf_row(PerfCheckStatus::TooNoisy, Verdict::Skip)}));
        CHECK(ab_verdict_line(r) == "FAILED: REGRESSION in 1 case x kernel(s); 1 check(s) errored; 1 case x kernel(s) too noisy to gate");
    }
    SECTION("too noisy under --strict fails, and says why") {
        r.results.push_back(row_with({perf_row(PerfCheckStatus::TooNoisy, Verdict::Fail)}));
        CHECK(ab_verdict_line(r) == "FAILED: perf (too noisy to gate, --strict) failed on 1 case x kernel(s)");
    }
    SECTION("a run that did not complete is never green, and says why") {
        r.results.push_back(row_with({CheckResult(CheckName::Golden), perf_row(PerfCheckStatus::Ok, Verdict::Pass)}));
        r.complete = false;
        CHECK(r.verdict() == Verdict::Fail);
        CHECK(ab_verdict_line(r) == "FAILED: the run did not complete");
    }
    SECTION("a green run says so, and what it could not gate") {
        r.results.push_back(row_with({CheckResult(CheckName::Golden), perf_row(PerfCheckStatus::Ok, Verdict::Pass)}));
        CHECK(ab_verdict_line(r) == "passed: no regression");
        r.results.push_back(row_with({perf_row(PerfCheckStatus::TooNoisy, Verdict::Skip)}));
        REQUIRE(r.verdict() == Verdict::Pass);
        CHECK(ab_verdict_line(r) == "passed: no regression, but 1 case x kernel(s) too noisy to gate");
    }
}
