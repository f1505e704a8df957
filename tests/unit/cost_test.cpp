// Cost arithmetic against hand-computed values, the shipped pricing and workload files,
// and errors that name the file and the JSON path.
#include <cmath>
#include <map>

#include <catch2/catch.hpp>

#include "checks/cost.hpp"
#include "run/workloads.hpp"
#include "store/directory_store.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
const std::filesystem::path kSource = ATTNGATE_SOURCE_DIR;

DevicePrice price(double per_hour) {
    return DevicePrice{"test-device", "", per_hour, "USD", "https://example.test/prices", "2026-11-29", ""};
}

Workload two_shapes() {
    Workload w;
    w.name = "two";
    w.shapes = {{"a", 10.0, 2.0, "$.shapes[0]"}, {"b", 1.0, 1.0, "$.shapes[1]"}};
    w.memory_headroom_bytes = 1.44e9;
    w.restart_interval_hours = 24;
    return w;
}

template <typename T>
std::string error_of(const std::string &text, T (*parse)(std::string_view, const std::string &)) {
    auto r = parse(text, "dir/f.json");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::StartsWith("dir/f.json: "));
    return r.error().message;
}

Pricing shipped_pricing() {
    DirectoryStore store(kSource / "baselines");
    auto p = load_pricing(store);
    REQUIRE(p);
    REQUIRE(*p);
    return **p;
}
}  // namespace

TEST_CASE("cost per million tokens by hand", "[cost]") {
    // 0.036 s = 1e-5 h at 2/h is 2e-5 per call of 1000 tokens: 0.02 per million tokens.
    CHECK(cost_per_million_tokens(0.036, 1000, 2.0) == Approx(0.02));
    CHECK(cost_per_million_tokens(0.01, 512, 0.067006) == Approx(670.06 / 1843200.0));
    CHECK(std::isnan(cost_per_million_tokens(0.01, 0, 1.0)));
}

TEST_CASE("workload projection by hand over a 720 hour month", "[cost]") {
    // a: 20 calls/s x 0.05 s = 1 busy device -> 720 h -> 1440 at 2/h;
    // b: 1 call/s x 0.5 s = 0.5 device -> 360 h -> 720.
    auto p = project_workload(two_shapes(), {{"a", 0.05}, {"b", 0.5}}, price(2.0));
    REQUIRE(p);
    CHECK(p->device_hours_per_month == Approx(1080.0));
    CHECK(p->monthly_cost == Approx(2160.0));
    REQUIRE(p->shapes.size() == 2);
    CHECK(p->shapes[0].monthly_cost == Approx(1440.0));
    CHECK(p->shapes[1].device_hours_per_month == Approx(360.0));
    CHECK(p->price.source == "https://example.test/prices");
}

TEST_CASE("a workload shape without a measured time cannot be projected", "[cost]") {
    auto p = project_workload(two_shapes(), {{"a", 0.05}}, price(2.0));
    REQUIRE_FALSE(p);
    CHECK_THAT(p.error().message, Catch::Contains("$.shapes[1].case: no measured time for case \"b\""));
    CHECK_FALSE(project_workload(two_shapes(), {{"a", 0.05}, {"b", std::nan("")}}, price(2.0)));
}

TEST_CASE("cost change against the budget with the price source", "[cost]") {
    WorkloadProjection base, cur;
    base.workload = cur.workload = "w";
    base.price = cur.price = price(2.0);
    base.monthly_cost = 2000.0;
    cur.monthly_cost = 2160.0;
    auto c = compare_projection(cur, base, 5.0);
    CHECK(c.change == Approx(160.0));
    CHECK(c.change_pct == Approx(8.0));
    CHECK_FALSE(c.within_budget);
    CHECK_THAT(c.reason, Catch::Contains("+160.00 USD (+8.0%), beyond the 5% budget") &&
                             Catch::Contains("https://example.test/prices, as of 2026-11-29"));
    cur.monthly_cost = 2100.0;
    CHECK(compare_projection(cur, base, 5.0).within_budget);
    cur.monthly_cost = 1500.0;  // cheaper is always within budget
    CHECK(compare_projection(cur, base, 5.0).change_pct == Approx(-25.0));
    base.monthly_cost = 0.0;
    CHECK(std::isinf(compare_projection(cur, base, 5.0).change_pct));
    CHECK_FALSE(compare_projection(cur, base, 5.0).within_budget);
}

TEST_CASE("leak survival hours by hand", "[cost]") {
    // 1 KiB per call x 100 calls/s into 1 GiB: 2^30 / 102400 s = 10485.76 s = 2.9127 h.
    CHECK(leak_survival_hours(1024, 100, 1073741824.0) == Approx(10485.76 / 3600));
    CHECK(std::isinf(leak_survival_hours(0, 100, 1e9)));
    CHECK(std::isinf(leak_survival_hours(-5, 100, 1e9)));
}

TEST_CASE("a leak that exhausts the headroom before the restart fails", "[cost]") {
    // a: 20 calls/s x 1000 B = 72e6 B/h; 1.44e9 B of headroom last 20 h < 24 h.
    Workload w = two_shapes();
    auto v = check_leak(w, {{"a", 1000.0}, {"b", 0.0}});
    REQUIRE(v);
    CHECK(v->leak_bytes_per_hour == Approx(72e6));
    CHECK(v->survival_hours == Approx(20.0));
    CHECK_FALSE(v->survives);
    CHECK_THAT(v->reason, Catch::Contains("before the 24 h restart interval"));
    w.restart_interval_hours = 12;
    CHECK(check_leak(w, {{"a", 1000.0}, {"b", 0.0}})->survives);
    CHECK(std::isinf(check_leak(w, {{"a", 0.0}, {"b", 0.0}})->survival_hours));
    CHECK_FALSE(check_leak(w, {{"a", 0.0}}));  // b not measured: no verdict, never "no leak"
}

TEST_CASE("the shipped pricing names a source and date for every device", "[cost]") {
    const auto p = std::optional<Pricing>(shipped_pricing());
    CHECK(p->currency == "USD");
    for (const char *c : {"gcp-e2-standard-2", "gcp-tpu-v5e", "gcp-tpu-v5p", "gcp-tpu-v6e", "aws-a100-40gb", "aws-h100-80gb"}) {
        const DevicePrice *d = p->find(c);
        REQUIRE(d);
        CHECK(d->price_per_hour > 0);
        CHECK_FALSE(d->source.empty());
        CHECK(d->as_of.size() == 10);
        CHECK(d->currency == "USD");
        CHECK_THAT(d->note, Catch::Contains("before budgeting"));
    }
}

TEST_CASE("the shipped workloads load and reference only smoke cases and priced devices", "[cost]") {
    const auto pricing = std::optional<Pricing>(shipped_pricing());
    auto suite = load_suite(kSource / "suites" / "smoke.json");
    DirectoryStore store(kSource / "baselines");
    auto ws = load_workloads(store);
    REQUIRE(pricing);
    REQUIRE(suite);
    REQUIRE(ws);
    CHECK(ws->size() >= 2);
    for (const auto &w : *ws) {
        INFO(w.file.string());
        CHECK_FALSE(check_workload_refs(w, *pricing, *suite).has_value());
        CHECK(w.restart_interval_hours > 0);
        CHECK(w.memory_headroom_bytes > 0);
    }
}

TEST_CASE("workload references to unknown cases and devices name the place", "[cost]") {
    const auto pricing = std::optional<Pricing>(shipped_pricing());
    auto suite = load_suite(kSource / "suites" / "smoke.json");
    REQUIRE(pricing);
    REQUIRE(suite);
    Workload w = two_shapes();
    w.file = "w.json";
    w.device_class = "gcp-e2-standard-2";
    w.shapes[0].case_id = "mha_f32";
    auto e = check_workload_refs(w, *pricing, *suite);
    REQUIRE(e);
    CHECK_THAT(e->message, Catch::StartsWith("w.json: $.shapes[1].case: \"b\" is not a case of suite \"smoke\""));
    w.device_class = "tpu-v9";
    e = check_workload_refs(w, *pricing, *suite);
    REQUIRE(e);
    CHECK_THAT(e->message, Catch::StartsWith("w.json: $.device_class: \"tpu-v9\" is not a device class of"));
}

TEST_CASE("bad pricing files name the file and the JSON path", "[cost]") {
    const std::string head = R"({"schema_version": 1, "currency": "USD", "devices": [)";
    const std::string good = R"({"class": "a", "price_per_hour": 1, "source": "s", "as_of": "2026-01-01"})";
    CHECK_THAT(error_of(head + good + R"(, {"class": "b", "price_per_hour": 1, "source": "s", "as_of": "2026-01-01", "colour": 1}]})", parse_pricing),
               Catch::Contains("$.devices[1].colour: unknown field"));
    CHECK_THAT(error_of(head + R"({"class": "a", "source": "s", "as_of": "2026-01-01"}]})", parse_pricing),
               Catch::Contains("$.devices[0].price_per_hour: required field is missing"));
    CHECK_THAT(error_of(head + R"({"class": "a", "price_per_hour": "1", "source": "s", "as_of": "2026-01-01"}]})", parse_pricing),
               Catch::Contains("$.devices[0].price_per_hour: expected a number, got a string"));
    CHECK_THAT(error_of(head + R"({"class": "a", "price_per_hour": 1, "source": "s", "as_of": "Jan 2026"}]})", parse_pricing),
               Catch::Contains("$.devices[0].as_of: expected a date YYYY-MM-DD"));
    CHECK_THAT(error_of(head + good + ", " + good + "]}", parse_pricing), Catch::Contains("$.devices[1].class: duplicate device class \"a\""));
    CHECK_THAT(error_of(R"({"currency": "USD", "devices": []})", parse_pricing), Catch::Contains("$.devices: expected a non-empty array"));
    CHECK_THAT(error_of(R"({"schema_version": 2, "currency": "USD", "devices": []})", parse_pricing), Catch::Contains("$.schema_version"));
}

TEST_CASE("bad workload files name the file and the JSON path", "[cost]") {
    const std::string head = R"({"name": "w", "device_class": "d", "memory_headroom_bytes": 1, "restart_interval_hours": 24, "shapes": [)";
    CHECK_THAT(error_of(head + R"({"case": "a", "requests_per_second": 1}, {"requests_per_second": 1}]})", parse_workload),
               Catch::Contains("$.shapes[1].case: required field is missing"));
    CHECK_THAT(error_of(head + R"({"case": "a", "requests_per_second": -1}]})", parse_workload),
               Catch::Contains("$.shapes[0].requests_per_second: expected a request rate >= 0, got -1"));
    CHECK_THAT(error_of(R"({"name": "w", "device_class": "d", "memory_headroom_bytes": 1, "restart_interval_hours": 0, "shapes": [{"case": "a", "requests_per_second": 1}]})", parse_workload),
               Catch::Contains("$.restart_interval_hours: expected a number of hours > 0"));
    CHECK_THAT(error_of(R"({"name": "w", "device_class": "d", "restart_interval_hours": 1, "shapes": [{"case": "a", "requests_per_second": 1}]})", parse_workload),
               Catch::Contains("$.memory_headroom_bytes: required field is missing"));
    auto ok = [&] {
        return parse_workload(head + R"({"case": "a", "requests_per_second": 2, "calls_per_request": 3}]})", "w.json");
    }();
    REQUIRE(ok);
    CHECK(ok->cost_budget_pct == 5.0);
    CHECK(ok->shapes[0].calls_per_second() == 6.0);
}

TEST_CASE("two workload files with the same name are rejected", "[cost]") {
    test::TempDir dir;
    const std::string w = R"({"name": "same", "device_class": "d", "memory_headroom_bytes": 1, "restart_interval_hours": 1, "shapes": [{"case": "a", "requests_per_second": 1}]})";
    std::filesystem::create_directories(dir / "workloads");
    test::write_text(dir / "workloads" / "a.json", w);
    test::write_text(dir / "workloads" / "b.json", w);
    test::write_text(dir / "workloads" / "notes.txt", "ignored");
    DirectoryStore store(dir.path());
    auto ws = load_workloads(store);
    REQUIRE_FALSE(ws);
    CHECK_THAT(ws.error().message, Catch::Contains("b.json: $.name: workload \"same\" is also defined in"));
    DirectoryStore empty(dir / "missing");
    CHECK(load_workloads(empty)->empty());  // no profiles: nothing to project
}

TEST_CASE("a shipped workload none of whose cases the run has is another suite's and is left out", "[cost]") {
    test::TempDir share;
    REQUIRE(::setenv("ATTNGATE_DATA_DIR", share.path().c_str(), 1) == 0);  // the installed data, as a .deb has it
    Pricing pricing;
    pricing.devices.push_back(price(2.0));
    Workload shipped = two_shapes();
    shipped.device_class = "test-device";
    shipped.file = share.path() / "baselines" / "workloads" / "two.json";
    Workload team = shipped;  // the team's own, with case ids it mistyped
    team.name = "team";
    team.file = "/src/team/baselines/workloads/team.json";
    RunResults run = test::results_with({});
    CaseResult row;
    row.case_id = "team_case";
    row.kernel = "flash";
    run.results.push_back(row);
    REQUIRE(add_workloads(run, {shipped, team}, pricing, "", false));
    ::unsetenv("ATTNGATE_DATA_DIR");
    REQUIRE(run.workloads.size() == 1);  // smoke's is not "not projected" on a team's suite; the team's says why
    CHECK(run.workloads[0].workload == "team");
    CHECK(run.workloads[0].verdict == Verdict::Skip);
}
