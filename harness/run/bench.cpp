// `attngate bench`: GFLOP/s of the built-in kernels beside the BLAS sgemm ceiling measured
// in the same run, at the same sizes and thread count.
#include "run/bench.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <memory>
#include <set>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>

#include "attngate/bf16.hpp"
#include "attngate/kernel_tools.hpp"
#include "backend/memory.hpp"
#include "io/rng.hpp"
#include "io/sizes.hpp"
#include "run/memory_bandwidth.hpp"
#include "stats/stats.hpp"
#include "checks/throughput.hpp"
#include "backend/timing.hpp"
#include "io/json_io.hpp"
#include "run/decode_bench.hpp"
#include "run/sgemm_ceiling.hpp"

namespace attngate {

int64_t bench_heads(int64_t seq) {
    const double heads = 8.0 * (2048.0 / static_cast<double>(seq)) * (2048.0 / static_cast<double>(seq));
    return std::max<int64_t>(1, static_cast<int64_t>(std::llround(heads)));
}

std::vector<int> bench_threads(const BenchOptions &o, int all_threads) {
    std::vector<int> threads;
    for (int t : o.threads) {
        const int n = t > 0 ? t : all_threads;
        if (std::find(threads.begin(), threads.end(), n) == threads.end()) threads.push_back(n);
    }
    return threads;
}

std::vector<BenchConfig> bench_configs(const BenchOptions &o, int all_threads) {
    if (!o.attention_rows) return {};
    const std::vector<int> threads = bench_threads(o, all_threads);
    std::vector<BenchConfig> out;
    for (int64_t s : o.seqs)
        for (int64_t d : o.head_dims)
            for (bool causal : o.causal)
                for (attngate_dtype dt : o.dtypes)
                    for (int t : threads)
                        for (const auto &k : o.kernels) {
                            BenchConfig c{k, s, d, bench_heads(s), causal, dt, t, {}};
                            const int64_t mib = s * s * 4 / (1 << 20);
                            if (k == "native" && mib > o.native_max_mib)
                                c.skip_reason = fmt::format("score matrix {} MiB per head > --native-max-mib {}", mib,
                                                            o.native_max_mib);
                            out.push_back(std::move(c));
                        }
    return out;
}

std::string bench_header() {
    return fmt::format("{:<7} {:<5} {:<6} {:>5} {:>4} {:>5} {:>3} {:>10} {:>9} {:>10} {:>13} {:>6}", "kernel", "dtype",
                       "mask", "S", "D", "heads", "thr", "ms/call", "GFLOP/s", "tokens/s", "sgemm GFLOP/s", "ratio");
}

std::string format_bench_row(const BenchRow &r) {
    const BenchConfig &c = r.config;
    const std::string head = fmt::format("{:<7} {:<5} {:<6} {:>5} {:>4} {:>5} {:>3}", c.kernel,
                                         c.dtype == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32", c.causal ? "causal" : "full",
                                         c.seq, c.head_dim, c.heads, c.threads);
    if (!c.skip_reason.empty()) return head + "  skipped: " + c.skip_reason;
    return head + fmt::format(" {:>10.2f} {:>9.1f} {:>10.0f} {:>13.1f} {:>6.2f}", r.seconds * 1e3, r.gflops, r.tokens_per_s,
                              r.ceiling_gflops, r.ratio());
}

namespace {

/// Q, K and V of one (S, D, dtype), uniform on [-1, 1).
struct BenchInputs {
    std::vector<float> q, k, v;
    std::vector<uint16_t> q16, k16, v16;
};

BenchInputs make_inputs(int64_t seq, int64_t heads, int64_t d, attngate_dtype dtype) {
    const size_t n = static_cast<size_t>(seq * heads * d);
    BenchInputs in;
    const CounterRng rq(7, "bench.q"), rk(7, "bench.k"), rv(7, "bench.v");
    auto fill = [&](const CounterRng &rng, std::vector<float> &f, std::vector<uint16_t> &b) {
        if (dtype == ATTNGATE_DTYPE_F32) {
            f.resize(n);
            for (size_t i = 0; i < n; ++i) f[i] = rng.uniform(i);
        } else {
            b.resize(n);
            for (size_t i = 0; i < n; ++i) b[i] = float_to_bf16(rng.uniform(i));
        }
    };
    fill(rq, in.q, in.q16);
    fill(rk, in.k, in.k16);
    fill(rv, in.v, in.v16);
    return in;
}

}  // namespace

Result<std::unique_ptr<BenchInstance>> BenchInstance::make(const attngate_kernel *kernel, int threads) {
    const attngate_kernel_params params{threads, nullptr};
    char err[256] = {0};
    void *handle = kernel->init ? kernel->init(kernel, &params, err, sizeof err) : nullptr;
    if (kernel->init && !handle) return fail(ErrorKind::Infra, "kernel {}: init failed: {}", kernel->name, err);
    return std::unique_ptr<BenchInstance>(new BenchInstance(kernel, handle));
}

BenchInstance::~BenchInstance() {
    if (kernel_->free && handle_) kernel_->free(kernel_, handle_);
}

std::string decode_header() {
    return fmt::format("{:<13} {:<5} {:>4} {:>6} {:>3} {:>3} {:>4} {:>4} {:>3} {:>9} {:>9} {:>10} {:>9} {:>9} {:>6}", "kernel", "dtype",
                       "seqs", "kv_len", "Hq", "Hkv", "D", "page", "thr", "ms/call", "tokens/s", "KV GB/s", "copy GB/s",
                       "triad GB/s", "ratio");
}

std::string format_decode_row(const DecodeRow &r) {
    const DecodeShape &s = r.shape;
    return fmt::format("{:<13} {:<5} {:>4} {:>6} {:>3} {:>3} {:>4} {:>4} {:>3} {:>9.2f} {:>9.0f} {:>10.2f} {:>9.2f} {:>9.2f} {:>6.2f}",
                       r.kernel, s.dtype == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32", s.sequences, s.kv_len, s.heads_q,
                       s.heads_kv, s.head_dim, s.page_size, r.threads, r.seconds * 1e3, r.tokens_per_s, r.kv_gb_per_s,
                       r.bandwidth.copy_gb_per_s, r.bandwidth.triad_gb_per_s, r.ratio());
}

namespace {

json::value number_or_null(double x) { return std::isfinite(x) ? json::value(x) : json::value(nullptr); }

json::object bandwidth_json(const BandwidthRow &b) {
    return json::object{{"threads", b.threads}, {"array_bytes", b.array_bytes}, {"copy_gb_per_s", number_or_null(b.copy_gb_per_s)},
                        {"triad_gb_per_s", number_or_null(b.triad_gb_per_s)}, {"best_gb_per_s", number_or_null(b.best())}};
}

/// The ABI problem of one config over its inputs, writing to out (allocator and instance
/// left to the caller).
attngate_problem bench_problem(const BenchConfig &c, const BenchInputs &in, float *out) {
    attngate_problem p{};
    p.batch = 1;
    p.seq_q = p.seq_k = c.seq;
    p.heads_q = p.heads_kv = c.heads;
    p.head_dim = p.head_dim_v = c.head_dim;
    p.dtype = c.dtype;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    p.causal = c.causal;
    p.window_left = p.window_right = -1;
    const bool bf16 = c.dtype == ATTNGATE_DTYPE_BF16;
    p.q = bf16 ? static_cast<const void *>(in.q16.data()) : in.q.data();
    p.k = bf16 ? static_cast<const void *>(in.k16.data()) : in.k.data();
    p.v = bf16 ? static_cast<const void *>(in.v16.data()) : in.v.data();
    p.out = out;
    return p;
}

/// A row's figures from its samples and those of its sgemm ceiling.
void measure_row(BenchRow &r, const std::vector<double> &samples, double ceiling_flops, const std::vector<double> &ceiling_samples) {
    const BenchConfig &c = r.config;
    AttentionShape shape;
    shape.seq_q = shape.seq_k = c.seq;
    shape.heads_q = c.heads;
    shape.head_dim = shape.head_dim_v = c.head_dim;
    shape.causal = c.causal;
    r.seconds = median(samples);
    r.gflops = gflops_per_second(attention_flops(shape), r.seconds);
    r.tokens_per_s = tokens_per_second(shape, r.seconds);
    r.ceiling_gflops = gflops_per_second(ceiling_flops, median(ceiling_samples));
}

}  // namespace

json::object bench_json(const BenchResults &r) {
    json::array rows, decode, bandwidth;
    for (const BenchRow &b : r.rows) {
        const BenchConfig &c = b.config;
        json::object o{{"kernel", c.kernel}, {"dtype", c.dtype == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32"},
                       {"mask", c.causal ? "causal" : "full"}, {"seq", c.seq}, {"head_dim", c.head_dim}, {"heads", c.heads},
                       {"threads", c.threads}};
        if (!c.skip_reason.empty()) o["skipped"] = c.skip_reason;
        else o.insert({{"seconds", b.seconds}, {"gflops", number_or_null(b.gflops)}, {"tokens_per_s", number_or_null(b.tokens_per_s)},
                       {"sgemm_gflops", number_or_null(b.ceiling_gflops)}, {"ratio", number_or_null(b.ratio())}});
        rows.push_back(std::move(o));
    }
    for (const DecodeRow &d : r.decode) {
        const DecodeShape &s = d.shape;
        decode.push_back(json::object{
            {"kernel", d.kernel}, {"dtype", s.dtype == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32"}, {"sequences", s.sequences},
            {"kv_len", s.kv_len}, {"heads_q", s.heads_q}, {"heads_kv", s.heads_kv}, {"head_dim", s.head_dim},
            {"page_size", s.page_size}, {"threads", d.threads}, {"seconds", d.seconds},
            {"samples_s", json::array(d.samples_s.begin(), d.samples_s.end())}, {"tokens_per_s", number_or_null(d.tokens_per_s)},
            {"kv_bytes", s.kv_bytes()}, {"kv_gb_per_s", number_or_null(d.kv_gb_per_s)}, {"bandwidth", bandwidth_json(d.bandwidth)},
            {"ratio", number_or_null(d.ratio())}});
    }
    for (const BandwidthRow &b : r.bandwidth) bandwidth.push_back(bandwidth_json(b));
    return json::object{{"schema", "attngate-bench/1"}, {"rows", std::move(rows)}, {"decode", std::move(decode)},
                        {"memory_bandwidth", std::move(bandwidth)},
                        {"notes", json::object{{"ratio", "rows: GFLOP/s over sgemm's; decode: KV GB/s over the better of STREAM copy "
                                                          "and triad on the same threads, same run"},
                                               {"kv_bytes", "every sequence's K and V rows, each read once"},
                                               {"seconds", "median per call"}}}};
}

namespace {

/// The dense rows: each configuration's problem and instance, and its sgemm ceiling.
class AttentionBench {
public:
    explicit AttentionBench(const std::vector<BenchConfig> &configs)
        : configs_(configs), outputs_(configs.size()), problems_(configs.size()), request_of_(configs.size(), SIZE_MAX) {}

    /// Prepares every configuration and appends its call (and each new ceiling) to requests.
    Result<void> prepare(const KernelRegistry &reg, std::vector<TimedCall> &requests) {
        for (size_t i = 0; i < configs_.size(); ++i) {
            const BenchConfig &c = configs_[i];
            if (!c.skip_reason.empty()) continue;
            const attngate_kernel *kernel = reg.find(c.kernel);
            if (!kernel) return fail(ErrorKind::Usage, "--kernel {}: no such kernel", c.kernel);
            auto &inst = instances_[{c.kernel, c.threads}];
            if (!inst) {
                auto made = BenchInstance::make(kernel, c.threads);
                if (!made) return std::unexpected(made.error());
                inst = std::move(*made);
            }
            auto &in = inputs_[{c.seq, c.head_dim, static_cast<int>(c.dtype)}];
            if (!in) in = std::make_unique<BenchInputs>(make_inputs(c.seq, c.heads, c.head_dim, c.dtype));
            outputs_[i].assign(static_cast<size_t>(c.seq * c.heads * c.head_dim), 0.0f);
            attngate_problem &p = problems_[i] = problem(c, *in, outputs_[i].data(), inst->handle());
            request_of_[i] = requests.size();
            requests.push_back({c.kernel, [&p, kernel] {
                                    char err[256];
                                    if (kernel->run(kernel, &p, err, sizeof err) != 0)
                                        fmt::print(stderr, "bench: {} failed: {}\n", kernel->name, err);
                                }});
            if (!ceiling_request_.try_emplace({c.seq, c.head_dim, c.threads}, requests.size()).second) continue;
            auto made = SgemmCeiling::make(c.threads, c.seq, c.head_dim);
            if (!made) return std::unexpected(made.error());
            requests.push_back({"sgemm", [g = made->get()] { g->run(); }});
            ceilings_[{c.seq, c.head_dim, c.threads}] = std::move(*made);
        }
        return {};
    }

    /// The rows, in configuration order, from every request's samples.
    void collect(const std::vector<std::vector<double>> &samples, std::vector<BenchRow> &rows) const {
        for (size_t i = 0; i < configs_.size(); ++i) {
            BenchRow r;
            const BenchConfig &c = r.config = configs_[i];
            if (request_of_[i] == SIZE_MAX) {
                r.seconds = r.gflops = r.tokens_per_s = r.ceiling_gflops = NAN;
            } else {
                const std::tuple<int64_t, int64_t, int> key{c.seq, c.head_dim, c.threads};
                measure_row(r, samples[request_of_[i]], ceilings_.at(key)->flops(), samples[ceiling_request_.at(key)]);
            }
            rows.push_back(std::move(r));
        }
    }

private:
    attngate_problem problem(const BenchConfig &c, const BenchInputs &in, float *out, void *instance) {
        attngate_problem p = bench_problem(c, in, out);
        p.allocator = alloc_.abi();
        p.instance = instance;
        return p;
    }

    const std::vector<BenchConfig> &configs_;
    std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<BenchInputs>> inputs_;
    std::map<std::pair<std::string, int>, std::unique_ptr<BenchInstance>> instances_;
    std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<SgemmCeiling>> ceilings_;
    std::map<std::tuple<int64_t, int64_t, int>, size_t> ceiling_request_;  // (S, D, threads) -> request
    CountingAllocator alloc_;
    std::vector<std::vector<float>> outputs_;
    std::vector<attngate_problem> problems_;
    std::vector<size_t> request_of_;
};

}  // namespace

int64_t BenchBytes::total() const { return saturating_add(saturating_add(attention, decode), stream); }

BenchBytes bench_bytes(const BenchOptions &o, const std::vector<BenchConfig> &configs, int all_threads) {
    constexpr auto mul = saturating_product;
    BenchBytes b;
    std::set<std::tuple<int64_t, int64_t, int>> inputs, ceilings;
    int64_t scores = 0;  // native's workspace, one configuration at a time
    for (const auto &c : configs) {
        if (!c.skip_reason.empty()) continue;
        const int64_t tensor = mul({c.seq, c.heads, c.head_dim});
        b.attention = saturating_add(b.attention, mul({4, tensor}));  // its output
        if (inputs.insert({c.seq, c.head_dim, static_cast<int>(c.dtype)}).second)
            b.attention = saturating_add(b.attention, mul({3, c.dtype == ATTNGATE_DTYPE_BF16 ? 2 : 4, tensor}));
        if (ceilings.insert({c.seq, c.head_dim, c.threads}).second)
            b.attention = saturating_add(b.attention, mul({4, saturating_add(mul({4, c.seq, c.head_dim}), mul({std::min<int64_t>(c.seq, 512), c.seq}))}));
        if (c.kernel == "native") scores = std::max(scores, mul({4, saturating_add(mul({c.seq, c.seq}), mul({2, c.seq, c.head_dim}))}));
    }
    b.attention = saturating_add(b.attention, scores);
    if (!o.decode_rows) return b;
    const DecodeShape &s = o.decode;
    const int64_t threads = static_cast<int64_t>(bench_threads(o, all_threads).size());
    const int64_t per_seq = (s.kv_len + s.page_size - 1) / s.page_size, needed = mul({s.sequences, per_seq});
    const int64_t pages = saturating_add(needed, std::max<int64_t>(1, needed / 4));
    const int64_t elem = s.dtype == ATTNGATE_DTYPE_BF16 ? 2 : 4;
    // K and V pools, Q, the page table and the layout's shuffle (17 bytes a page), an output per kernel and thread count.
    for (int64_t term : {mul({2, elem, pages, s.page_size, s.heads_kv, s.head_dim}), mul({elem, s.sequences, s.heads_q, s.head_dim}),
                         mul({4, s.sequences, per_seq}), mul({17, pages}),
                         mul({4, threads, static_cast<int64_t>(o.decode_kernels.size()), s.sequences, s.heads_q, s.head_dim})})
        b.decode = saturating_add(b.decode, term);
    b.stream = mul({3, threads, o.stream_bytes > 0 ? o.stream_bytes : stream_array_bytes(last_level_cache_bytes())});
    return b;
}

int64_t available_memory_bytes() {
    if (std::FILE *f = std::fopen("/proc/meminfo", "re")) {
        char line[256];
        long long kib = -1;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
        std::fclose(f);
        if (kib > 0) return saturating_mul(kib, 1024);
    }
    return saturating_mul(::sysconf(_SC_PHYS_PAGES), ::sysconf(_SC_PAGESIZE));
}

Result<BenchResults> run_bench(const KernelRegistry &reg, const std::vector<BenchConfig> &configs, const BenchOptions &o) {
    std::vector<TimedCall> requests;
    AttentionBench attention(configs);
    if (auto r = attention.prepare(reg, requests); !r) return std::unexpected(r.error());
    std::unique_ptr<DecodeBench> decode;
    if (o.decode_rows) {
        auto made = DecodeBench::make(reg, o, bench_threads(o, kernels::default_threads()));
        if (!made) return std::unexpected(made.error());
        decode = std::move(*made);
        decode->add_requests(requests);
    }
    TimingOptions topt;
    topt.repetitions = o.repetitions;
    topt.min_time_s = o.min_time_s;
    const auto samples = requests.empty() ? std::vector<std::vector<double>>{} : time_calls(requests, topt);
    BenchResults results;
    attention.collect(samples, results.rows);
    if (decode) decode->collect(samples, results);
    return results;
}

}  // namespace attngate
