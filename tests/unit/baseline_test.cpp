// Baseline store and update planning.
#include <catch2/catch.hpp>

#include "store/baseline_update.hpp"
#include "io/files.hpp"
#include "store/directory_store.hpp"
#include "store/keys.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
RunResults results_with_memory() {
    RunResults r;
    r.suite = "s";
    r.checks = {CheckName::Golden, CheckName::Memory};
    r.complete = true;
    for (const char *kernel : {"flash", "native"}) {
        CaseResult c;
        c.case_id = "a";
        c.kernel = kernel;
        c.checks.push_back(CheckResult(CheckName::Golden, std::string(kernel) == "native" ? Verdict::Fail : Verdict::Pass, ""));
        MemoryMetrics m;
        m.abi_peak_bytes = std::string(kernel) == "flash" ? 1100 : 5000;
        m.rss_peak_delta_bytes = 4096;
        m.leak_bytes_per_call = 0.0;
        c.checks.emplace_back(m, Verdict::Pass, "");
        r.results.push_back(c);
    }
    return r;
}
}  // namespace

TEST_CASE("update rows show old and new with the change and mark failed goldens", "[baseline]") {
    BaselineFile existing{CheckName::Memory, "s", "", {BaselineEntry{"a", "flash", MemoryBaseline{1000, std::nullopt, std::nullopt}, {}, {}}}, ""};
    const auto rows = plan_update(results_with_memory(), *find_baseline_kind("memory"), &existing, "");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].label() == "a/flash");
    CHECK(*rows[0].old_value == 1000);
    CHECK(rows[0].new_value == 1100);
    CHECK(*rows[0].change_pct() == Approx(10.0));
    CHECK(rows[0].refused.empty());
    CHECK_FALSE(rows[1].old_value);
    CHECK(rows[1].refused == "its golden check failed");
    CHECK(plan_update(results_with_memory(), *find_baseline_kind("memory"), &existing, "*/nat*").size() == 1);
}

TEST_CASE("a row is changed when it is new, did not pass, or an exact value moved", "[baseline]") {
    RunResults results = results_with_memory();
    // Stored as the run measured both rows: only the RSS delta, which is not exact, differs.
    BaselineFile existing{CheckName::Memory, "s", "", {BaselineEntry{"a", "flash", MemoryBaseline{1100, 8192, 0.0}, {}, {}},
                                                       BaselineEntry{"a", "native", MemoryBaseline{5000, 4096, 0.0}, {}, {}}}, ""};
    auto rows = plan_update(results, *find_baseline_kind("memory"), &existing, "");
    REQUIRE(rows.size() == 2);
    CHECK_FALSE(rows[0].changed);
    CHECK_FALSE(rows[1].changed);
    SECTION("an exact value that moved") {
        std::get<MemoryBaseline>(existing.entries[1].values).abi_peak_bytes = 4096;
        rows = plan_update(results, *find_baseline_kind("memory"), &existing, "");
        CHECK_FALSE(rows[0].changed);
        CHECK(rows[1].changed);
    }
    SECTION("a check that did not pass") {
        results.results[0].checks[1].verdict = Verdict::Fail;
        rows = plan_update(results, *find_baseline_kind("memory"), &existing, "");
        CHECK(rows[0].changed);
        CHECK_FALSE(rows[1].changed);
    }
    SECTION("no baseline yet") {
        existing.entries.pop_back();
        rows = plan_update(results, *find_baseline_kind("memory"), &existing, "");
        CHECK_FALSE(rows[0].changed);
        CHECK(rows[1].changed);
        CHECK(plan_update(results, *find_baseline_kind("memory"), nullptr, "")[0].changed);
    }
    SECTION("timings differ on every run: a perf row that passed is unchanged") {
        for (auto &r : results.results) {
            PerfMetrics m;
            m.median_s = 0.0012;
            r.checks[1] = CheckResult(m, r.kernel == "flash" ? Verdict::Pass : Verdict::Fail, "");
        }
        PerfBaseline stored;
        stored.median_s = 0.0010;
        BaselineFile perf{CheckName::Perf, "s", "m", {BaselineEntry{"a", "flash", stored, {}, {}}, BaselineEntry{"a", "native", stored, {}, {}}}, ""};
        rows = plan_update(results, *find_baseline_kind("perf"), &perf, "");
        REQUIRE(rows.size() == 2);
        CHECK_FALSE(rows[0].changed);
        CHECK(rows[1].changed);
    }
}

TEST_CASE("accepted rows are written with provenance and read back", "[baseline]") {
    test::TempDir dir;
    DirectoryStore store(dir.path());
    const std::string key = *baseline_key(CheckName::Memory, "s");
    const auto rows = plan_update(results_with_memory(), *find_baseline_kind("memory"), nullptr, "a/flash");
    REQUIRE(apply_update(store, key, BaselineFile{CheckName::Memory, "s", "", {}, ""}, rows, make_provenance("because", machine_class("ci-box", "avx2"), {})));
    auto back = load_baseline_file(store, key);
    REQUIRE(back);
    REQUIRE(*back);
    const BaselineEntry *e = (*back)->find("a", "flash");
    REQUIRE(e);
    REQUIRE(e->get<MemoryBaseline>());
    CHECK(e->get<MemoryBaseline>()->abi_peak_bytes == 1100);
    // The baseline keeps the metrics its kind names, in the order baseline files list them.
    CHECK(json::serialize(baseline_values_json(*e)) == R"({"abi_peak_bytes":1100,"rss_peak_delta_bytes":4096,"leak_bytes_per_call":0E0})");
    CHECK(e->provenance.at("reason").as_string() == "because");
    CHECK_THAT(std::string(e->provenance.at("machine_class").as_string()), Catch::StartsWith("ci-box (") && Catch::EndsWith(" avx2)"));
    for (const char *key : {"date", "user", "git_commit"}) CHECK(e->provenance.contains(key));
}

TEST_CASE("a malformed baseline file names the file and the place", "[baseline]") {
    test::TempDir dir;
    test::write_text(dir / "b.json", R"({"schema_version": 1, "check": "memory", "suite": "s", "entries": [{"case": "a", "kernel": 3}]})");
    DirectoryStore store(dir.path());
    auto f = load_baseline_file(store, "b.json");
    REQUIRE_FALSE(f);
    CHECK_THAT(f.error().message, Catch::Contains("b.json: $.entries[0].kernel: expected a string"));
}

TEST_CASE("a baseline file keeps each fingerprint once and gives every entry its own back", "[baseline]") {
    const json::object fp_a{{"toolchain", json::object{{"compiler", "g++ 12"}}}};
    const json::object fp_b{{"toolchain", json::object{{"compiler", "clang 19"}}}};
    BaselineFile f{CheckName::Memory, "s", "", {}, ""};
    for (int i = 0; i < 50; ++i)
        f.entries.push_back(BaselineEntry{fmt::format("c{}", i), "k", MemoryBaseline{}, {}, json::object{{"reason", "r"}, {"fingerprint", i == 7 ? fp_b : fp_a}}});
    const std::string text = serialize_baseline_file(f);
    const json::value doc = json::parse(text);
    CHECK(doc.at("fingerprints").as_object().size() == 2);
    CHECK(text.find("clang 19") == text.rfind("clang 19"));  // written once
    CHECK(text.find("g++ 12") == text.rfind("g++ 12"));
    auto back = parse_baseline_file(text, "b.json");
    REQUIRE(back);
    REQUIRE(back->entries.size() == 50);
    for (size_t i = 0; i < 50; ++i) {
        CHECK(back->entries[i].provenance.at("fingerprint").as_object() == (i == 7 ? fp_b : fp_a));
        CHECK_FALSE(back->entries[i].provenance.contains("fingerprint_id"));
    }
    // A file written before 0.2.0 kept the fingerprint in each entry; it still reads.
    auto old = parse_baseline_file(R"({"schema_version": 1, "check": "memory", "suite": "s", "entries": [{"case": "a", "kernel": "k",
        "values": {}, "provenance": {"fingerprint": {"toolchain": {"compiler": "g++ 12"}}}}]})", "old.json");
    REQUIRE(old);
    CHECK(old->entries[0].provenance.at("fingerprint").as_object() == fp_a);
    auto dangling = parse_baseline_file(R"({"schema_version": 1, "check": "memory", "suite": "s", "fingerprints": {},
        "entries": [{"case": "a", "kernel": "k", "values": {}, "provenance": {"fingerprint_id": "0123456789abcdef"}}]})", "d.json");
    REQUIRE_FALSE(dangling);
    CHECK_THAT(dangling.error().message, Catch::Contains("d.json: $.entries[0].provenance.fingerprint_id: expected the id of a fingerprint in $.fingerprints"));
}
