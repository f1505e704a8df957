// The bench's configuration list and table format (never its timings: no test here may
// depend on the machine's speed).
#include <cmath>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "run/bench.hpp"
#include "run/sgemm_ceiling.hpp"

using namespace attngate;

TEST_CASE("bench configurations cross every option in table order", "[bench]") {
    const BenchOptions o;
    const auto two = bench_configs(o, 2);
    CHECK(two.size() == 3 * 2 * 2 * 2 * 2 * 2);  // S, D, mask, dtype, threads {1, all}, kernel
    CHECK(two.front().kernel == "flash");
    CHECK(two.front().seq == 512);
    CHECK(two.front().threads == 1);
    CHECK(two[1].kernel == "native");
    CHECK(two[2].threads == 2);
    CHECK(two.back().seq == 8192);
    CHECK(two.back().causal);
    CHECK(two.back().dtype == ATTNGATE_DTYPE_BF16);
    // On one CPU "all threads" is 1 thread: listed once.
    CHECK(bench_configs(o, 1).size() == two.size() / 2);
    for (const auto &c : two) {
        CHECK(c.heads == bench_heads(c.seq));
        CHECK(c.skip_reason.empty());  // 256 MiB at 8192 is under the default limit
    }
    CHECK(bench_heads(2048) == 8);
    CHECK(bench_heads(512) == 128);
    CHECK(bench_heads(8192) == 1);
}

TEST_CASE("native is skipped, with the reason, where its score matrix is over the limit", "[bench]") {
    BenchOptions o;
    o.native_max_mib = 64;
    int skipped = 0;
    for (const auto &c : bench_configs(o, 1)) {
        if (c.skip_reason.empty()) continue;
        ++skipped;
        CHECK(c.kernel == "native");
        CHECK(c.seq == 8192);
        CHECK(c.skip_reason.find("256 MiB") != std::string::npos);
    }
    CHECK(skipped == 2 * 2 * 2);
}

TEST_CASE("bench rows line up under the header and say what was skipped", "[bench]") {
    BenchRow r;
    r.config = BenchConfig{"flash", 2048, 128, 8, true, ATTNGATE_DTYPE_BF16, 2, {}};
    r.seconds = 0.0125;
    r.gflops = 68.7;
    r.tokens_per_s = 163840;
    r.ceiling_gflops = 90.0;
    const std::string line = format_bench_row(r);
    CHECK(line.size() == bench_header().size());
    CHECK(line.find("flash") == 0);
    CHECK(line.find("bf16") != std::string::npos);
    CHECK(line.find("causal") != std::string::npos);
    CHECK(line.find("12.50") != std::string::npos);
    CHECK(line.find("0.76") != std::string::npos);
    r.config.skip_reason = "too big";
    CHECK(format_bench_row(r).find("skipped: too big") != std::string::npos);
}

TEST_CASE("the sgemm ceiling runs OpenBLAS's kernels for the CPU's vector extensions", "[bench]") {
    // OpenBLAS 0.3.21 falls back to SSE3 kernels on CPU models newer than itself (a quarter
    // of the ceiling on an AVX-512 Xeon); the bench names the core from the flags instead.
    if (const char *set = std::getenv("OPENBLAS_CORETYPE"); set && *set) {
        WARN("skipped: OPENBLAS_CORETYPE is set by the caller, and the caller's choice stands");
        return;
    }
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    const std::string want = avx512 ? (__builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX")
                             : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "Haswell"
                                                                                              : "";
    if (want.empty()) {
        WARN("skipped: no AVX2 on this CPU, so OpenBLAS's own choice stands");
        return;
    }
    const std::string d = blas_description();
    INFO(d);
    CHECK(d.find("(core " + want + ", chosen from the CPU's flags)") != std::string::npos);
    auto ceiling = SgemmCeiling::make(1, 64, 16);
    REQUIRE(ceiling.has_value());
    (*ceiling)->run();  // the chosen kernels run on this CPU
}
