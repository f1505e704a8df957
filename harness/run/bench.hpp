// The kernel bench behind `attngate bench`: which configurations it measures, how each is
// timed (Google Benchmark, beside the BLAS sgemm ceiling of the same run), and the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"
#include "backend/kernel_registry.hpp"

namespace attngate {

/// What to measure; every list is crossed with the others.
struct BenchOptions {
    std::vector<std::string> kernels = {"flash", "native"};
    std::vector<int64_t> seqs = {512, 2048, 8192};
    std::vector<int64_t> head_dims = {64, 128};
    std::vector<bool> causal = {false, true};
    std::vector<attngate_dtype> dtypes = {ATTNGATE_DTYPE_F32, ATTNGATE_DTYPE_BF16};
    std::vector<int> threads = {1, 0};  ///< 0: all CPUs (dropped when that is 1)
    int repetitions = 3;                ///< samples per configuration; the median is reported
    double min_time_s = 0.2;            ///< minimum seconds per sample
    int64_t native_max_mib = 2048;      ///< native needs Sq x Sk x 4 bytes per head; above this it is skipped
};

/// One measured configuration: B = 1, Hq = Hkv = heads_for(seq), Sq = Sk = seq, D = Dv.
struct BenchConfig {
    std::string kernel;
    int64_t seq = 0, head_dim = 0, heads = 0;
    bool causal = false;
    attngate_dtype dtype = ATTNGATE_DTYPE_F32;
    int threads = 1;
    std::string skip_reason;  ///< non-empty: listed but not measured, and why
};

/// Heads per configuration: about the same work at every length (8 heads at 2048), so
/// short sequences are not all overhead and 8192 does not take minutes.
int64_t bench_heads(int64_t seq);

/// The configurations in table order (S, D, causal, dtype, threads, kernel), threads 0
/// resolved to all_threads.
std::vector<BenchConfig> bench_configs(const BenchOptions &o, int all_threads);

/// A configuration's result. Values that were not measured are NaN.
struct BenchRow {
    BenchConfig config;
    double seconds = 0;         ///< median per call
    double gflops = 0;          ///< attention FLOPs of the kept scores / seconds
    double tokens_per_s = 0;    ///< query tokens (B x Sq) / seconds
    double ceiling_gflops = 0;  ///< BLAS sgemm at this S, D and thread count, same run
    double ratio() const { return gflops / ceiling_gflops; }
};

std::string bench_header();
std::string format_bench_row(const BenchRow &r);

/// Measures every configuration (kernels from reg, through the ABI with init/free), all
/// interleaved with their sgemm ceilings in one Google Benchmark run.
Result<std::vector<BenchRow>> run_bench(const KernelRegistry &reg, const std::vector<BenchConfig> &configs,
                                        const BenchOptions &o);

}  // namespace attngate
