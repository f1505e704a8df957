// The memory check's verdicts on synthetic observations, the slope, and the observation
// wire format between an isolated child and the parent.
#include <catch2/catch.hpp>

#include "checks/memory_check.hpp"
#include "backend/observe.hpp"

using namespace attngate;

namespace {
MemoryObservation clean(int64_t peak = 1000) {
    MemoryObservation m;
    m.calls = 12;
    m.abi_measured = true;
    m.abi_peak_bytes = peak;
    m.heap_live_bytes.assign(10, 500000);
    m.rss_bytes.assign(10, 8 << 20);
    m.rss_peak_delta_bytes = 4096;
    return m;
}

/// What an adapter reports for a JAX kernel: live arrays and RSS, no ABI allocator.
MemoryObservation remote(std::vector<int64_t> arrays, std::vector<int64_t> rss) {
    MemoryObservation m;
    m.calls = static_cast<int64_t>(arrays.size()) + 2;
    m.live_arrays = arrays;
    for (int64_t a : arrays) m.live_array_bytes.push_back(a * 65536);
    m.rss_bytes = std::move(rss);
    return m;
}
}  // namespace

TEST_CASE("kernels behind an adapter leak by live arrays; their RSS warm-up is no leak", "[memory]") {
    const MemoryPolicy policy;
    // Measured: JAX's RSS climbs while its allocator warms up, then plateaus.
    auto warm = memory_check(remote({13, 13, 13, 13, 13, 13}, {238264320, 238264320, 238395392, 238657536, 238657536, 238657536}),
                             std::nullopt, policy, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(warm.verdict == Verdict::Pass);
    CHECK_THAT(warm.reason, Catch::Contains("no leak"));
    CHECK_THAT(warm.reason, Catch::EndsWith("; peak not compared (an adapter's kernels are gated on leaks only)"));  // not read as gated
    CHECK(warm.as<MemoryMetrics>().source == "rss");
    auto leak = memory_check(remote({13, 14, 15, 16, 17, 18}, std::vector<int64_t>(6, 1 << 28)), std::nullopt, policy,
                             ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(leak.verdict == Verdict::Fail);
    CHECK_THAT(leak.reason, Catch::Contains("live array leak: 1.0 arrays (65536 B) retained per call"));
    std::vector<int64_t> climbing;
    for (int64_t i = 0; i < 6; ++i) climbing.push_back((1 << 28) + i * (4 << 20));
    auto rss = memory_check(remote({13, 13, 13, 13, 13, 13}, climbing), std::nullopt, policy, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(rss.verdict == Verdict::Fail);
    CHECK_THAT(rss.reason, Catch::Contains("RSS leak: the adapter's resident memory grows 4194304 B per call"));
}

TEST_CASE("least squares slope of known series", "[memory]") {
    CHECK(least_squares_slope({}) == 0.0);
    CHECK(least_squares_slope({5}) == 0.0);
    CHECK(least_squares_slope({10, 10, 10, 10}) == 0.0);
    CHECK(least_squares_slope({0, 80, 160, 240, 320}) == Approx(80.0));
    // One jump in the middle of a flat series: slope = 3/10 * 100 for n = 5 ([0,0,0,100,100]).
    CHECK(least_squares_slope({0, 0, 0, 100, 100}) == Approx(30.0));
}

TEST_CASE("a kernel that gives back during the measured calls what it kept before them is no leak", "[memory][isolation]") {
    // It keeps a 4 KiB block on its first call and frees it on its sixth: "leaked" is negative.
    Observation o;
    o.memory = clean();
    o.memory->abi_leaked_bytes = -4096;
    o.memory->abi_unfreed_allocations = -1;
    auto back = parse_observation(serialize_observation(o));  // was rejected: read as a crash
    REQUIRE(back);
    REQUIRE(back->memory);
    CHECK(back->memory->abi_leaked_bytes == -4096);
    const CheckResult r = memory_check(*back->memory, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_CONSTANT);
    CHECK(r.verdict == Verdict::Pass);
    CHECK_THAT(r.reason, !Catch::Contains("leak:"));
}

TEST_CASE("a clean observation passes and says there is no baseline yet", "[memory]") {
    const CheckResult r = memory_check(clean(), std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_CONSTANT);
    CHECK(r.verdict == Verdict::Pass);
    CHECK_THAT(r.reason, Catch::Contains("no memory baseline yet"));
    CHECK(r.as<MemoryMetrics>().leak_bytes_per_call == 0.0);
}

TEST_CASE("ABI allocations never freed fail with zero tolerance", "[memory]") {
    MemoryObservation m = clean();
    m.abi_leaked_bytes = 1;
    m.abi_unfreed_allocations = 1;
    const CheckResult r = memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("ABI allocator leak: 1 B"));
}

TEST_CASE("a growing heap is a leak with its rate; a step that stops is not", "[memory]") {
    MemoryObservation m = clean();
    for (size_t i = 0; i < m.heap_live_bytes.size(); ++i) m.heap_live_bytes[i] += 32 * static_cast<int64_t>(i);
    CheckResult r = memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("heap leak: 32.0 B retained per call"));
    CHECK(*r.as<MemoryMetrics>().leak_bytes_per_call == Approx(32.0));

    MemoryObservation rss = clean();
    for (size_t i = 0; i < rss.rss_bytes.size(); ++i) rss.rss_bytes[i] += 8192 * static_cast<int64_t>(i);
    r = memory_check(rss, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("RSS leak"));
}

TEST_CASE("one-time steps are no leak; a leak that keeps growing is, even every few calls", "[memory]") {
    // Seen on clean threaded kernels: a worker touches its scratch for the first time at
    // some call of the series (80 KiB of RSS), or a cache fills once (heap).
    MemoryObservation step = clean();
    for (size_t i = 6; i < step.rss_bytes.size(); ++i) step.rss_bytes[i] += 80 << 10;
    for (size_t i = 2; i < step.heap_live_bytes.size(); ++i) step.heap_live_bytes[i] += 480;
    const CheckResult once = memory_check(step, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(once.verdict == Verdict::Pass);
    CHECK(least_squares_slope(step.rss_bytes) > MemoryPolicy{}.rss_leak_bytes_per_call);  // the old rule's false alarm

    // Two workers' first touches, one in each half, still leave RSS flat on most calls.
    MemoryObservation two = clean();
    for (size_t i = 2; i < two.rss_bytes.size(); ++i) two.rss_bytes[i] += 80 << 10;
    for (size_t i = 7; i < two.rss_bytes.size(); ++i) two.rss_bytes[i] += 80 << 10;
    CHECK(memory_check(two, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED).verdict == Verdict::Pass);

    // 64 B kept on every third call grows in both halves: a leak.
    MemoryObservation sparse = clean();
    for (size_t i = 0; i < sparse.heap_live_bytes.size(); ++i) sparse.heap_live_bytes[i] += 64 * static_cast<int64_t>(i / 3);
    const CheckResult leak = memory_check(sparse, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(leak.verdict == Verdict::Fail);
    CHECK_THAT(leak.reason, Catch::Contains("heap leak"));

    CHECK(sustained_slope({0, 0, 0, 0, 0, 480, 480, 480, 480, 480}) == 0.0);
    CHECK(sustained_slope({0, 32, 64, 96, 128, 160, 192, 224}) == Approx(32.0));
    CHECK(median_increment({0, 4096, 8192, 8192, 12288}) == 4096.0);
    CHECK(median_increment({0, 0, 81920, 81920, 81920}) == 0.0);
    // A three-call series (the shortest a suite allows) with one first touch: no leak.
    MemoryObservation short_series = clean();
    short_series.rss_bytes = {8 << 20, 8 << 20, (8 << 20) + 77824};
    short_series.heap_live_bytes = {500000, 500480, 500480};
    CHECK(memory_check(short_series, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED).verdict == Verdict::Pass);
    short_series.heap_live_bytes = {500000, 500032, 500064};
    CHECK(memory_check(short_series, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED).verdict == Verdict::Fail);
}

TEST_CASE("a workspace that breaks the kernel's promise fails without a baseline", "[memory]") {
    // Doubling both sequence lengths: constant allows no growth, linear 2x, quadratic 4x
    // (each with 5% and 4 KiB of slack).
    MemoryObservation m = clean(100000);
    m.probe_seq_q = m.probe_seq_k = 256;
    m.probe_abi_peak_bytes = 100001;
    CHECK(memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_CONSTANT).verdict == Verdict::Fail);
    CHECK(memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_LINEAR).verdict == Verdict::Pass);
    m.probe_abi_peak_bytes = 250000;
    CHECK(memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_LINEAR).verdict == Verdict::Fail);
    CHECK(memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_QUADRATIC).verdict == Verdict::Pass);
    m.probe_abi_peak_bytes = 500000;
    const CheckResult r = memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_QUADRATIC);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("broke its quadratic promise"));
    CHECK(memory_check(m, std::nullopt, MemoryPolicy{}, ATTNGATE_WORKSPACE_UNSPECIFIED).verdict == Verdict::Pass);
}

TEST_CASE("peak memory is gated against its baseline at the policy's growth", "[memory]") {
    const MemoryPolicy policy;  // 10%
    CHECK(memory_check(clean(1100), MemoryBaseline{1000, -1, std::nullopt}, policy, ATTNGATE_WORKSPACE_UNSPECIFIED).verdict == Verdict::Pass);
    const CheckResult r = memory_check(clean(1101), MemoryBaseline{1000, -1, std::nullopt}, policy, ATTNGATE_WORKSPACE_UNSPECIFIED);
    CHECK(r.verdict == Verdict::Fail);
    CHECK_THAT(r.reason, Catch::Contains("peak memory grew 10.1%"));
    CHECK(r.as<MemoryMetrics>().peak_baseline_bytes == 1000);
}

TEST_CASE("observations survive the trip from the child; a truncated one is rejected", "[memory][isolation]") {
    Observation o;
    o.output = {1.0f, -2.5f, 3.0f};
    o.kernel_rc = 0;
    o.seconds = 0.25;
    o.memory = clean(777);
    o.memory->heap_live_bytes = {1, 2, 3};
    const std::string bytes = serialize_observation(o);
    auto back = parse_observation(bytes);
    REQUIRE(back);
    CHECK(back->output == o.output);
    CHECK(back->seconds == 0.25);
    REQUIRE(back->memory);
    CHECK(back->memory->abi_peak_bytes == 777);
    CHECK(back->memory->heap_live_bytes == std::vector<int64_t>{1, 2, 3});
    for (size_t cut : {size_t{0}, size_t{4}, bytes.size() / 2, bytes.size() - 1})
        CHECK_FALSE(parse_observation(std::string_view(bytes).substr(0, cut)));
}
