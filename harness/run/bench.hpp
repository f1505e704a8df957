// The kernel bench behind `attngate bench`: which configurations it measures, how each is
// timed (Google Benchmark, beside the BLAS sgemm ceiling of the same run), and the table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"
#include "backend/kernel_registry.hpp"

namespace attngate {

/// The decode row's batch: a paged KV cache over scattered pages, one query per sequence.
struct DecodeShape {
    int64_t sequences = 8, kv_len = 8192, heads_q = 32, heads_kv = 8, head_dim = 128, page_size = 16;
    attngate_dtype dtype = ATTNGATE_DTYPE_BF16;
    /// K and V bytes one call must read: every sequence's keys, each read once.
    double kv_bytes() const;
};

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
    bool attention_rows = true;         ///< the dense rows (beside sgemm)
    bool decode_rows = true;            ///< the decode rows (beside the memory bandwidth)
    std::vector<std::string> decode_kernels = {"flash-decode", "flash"};
    DecodeShape decode;
    int64_t stream_bytes = 0;           ///< per STREAM array; 0: four times the last-level cache (64 MiB .. 1 GiB)
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

/// The thread counts of a bench, 0 resolved to all_threads, each once.
std::vector<int> bench_threads(const BenchOptions &o, int all_threads);

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

/// The memory bandwidth on a thread count, measured in the same run as the decode rows.
struct BandwidthRow {
    int threads = 1;
    int64_t array_bytes = 0;
    double copy_gb_per_s = 0, triad_gb_per_s = 0;  ///< medians
    double best() const { return std::max(copy_gb_per_s, triad_gb_per_s); }
};

/// A decode row: KV bytes read per second beside the bandwidth at its thread count.
struct DecodeRow {
    std::string kernel;
    int threads = 1;
    DecodeShape shape;
    double seconds = 0;        ///< median per call
    double tokens_per_s = 0;   ///< the batch's query tokens per second
    double kv_gb_per_s = 0;    ///< kv_bytes / seconds
    std::vector<double> samples_s;
    BandwidthRow bandwidth;
    double ratio() const { return kv_gb_per_s / bandwidth.best(); }
};

struct BenchResults {
    std::vector<BenchRow> rows;
    std::vector<DecodeRow> decode;
    std::vector<BandwidthRow> bandwidth;
};

std::string bench_header();
std::string format_bench_row(const BenchRow &r);
std::string decode_header();
std::string format_decode_row(const DecodeRow &r);
/// Every figure of a bench as JSON (`attngate bench --json`); the caller adds the machine.
boost::json::object bench_json(const BenchResults &r);

/// Host bytes a bench holds at once, by part (saturating): every configuration is prepared
/// before the timing starts, so the parts add up.
struct BenchBytes {
    int64_t attention = 0;  ///< inputs, outputs and sgemm ceilings of every configuration, native's largest scores
    int64_t decode = 0;     ///< the decode rows' pools, tables and outputs
    int64_t stream = 0;     ///< three STREAM arrays per thread count
    int64_t total() const;
};
BenchBytes bench_bytes(const BenchOptions &o, const std::vector<BenchConfig> &configs, int all_threads);

/// Bytes of memory this machine can give a process now (MemAvailable, else the physical memory).
int64_t available_memory_bytes();

/// Measures every configuration (kernels from reg, through the ABI with init/free), all
/// interleaved with their sgemm ceilings, and the decode rows with the memory bandwidth, in
/// one Google Benchmark run.
Result<BenchResults> run_bench(const KernelRegistry &reg, const std::vector<BenchConfig> &configs, const BenchOptions &o);

/// A kernel instance from init, released by free (null handle: the kernel has no init).
class BenchInstance {
public:
    static Result<std::unique_ptr<BenchInstance>> make(const attngate_kernel *kernel, int threads);
    ~BenchInstance();
    BenchInstance(const BenchInstance &) = delete;
    BenchInstance &operator=(const BenchInstance &) = delete;
    void *handle() const { return handle_; }

private:
    BenchInstance(const attngate_kernel *kernel, void *handle) : kernel_(kernel), handle_(handle) {}
    const attngate_kernel *kernel_;
    void *handle_;
};

}  // namespace attngate
