// `attngate bench`: GFLOP/s of the built-in kernels beside the BLAS sgemm ceiling measured
// in the same run, at the same sizes and thread count.
#include "run/bench.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "attngate/bf16.hpp"
#include "attngate/kernel_tools.hpp"
#include "backend/memory.hpp"
#include "io/rng.hpp"
#include "stats/stats.hpp"
#include "checks/throughput.hpp"
#include "backend/timing.hpp"
#include "run/sgemm_ceiling.hpp"

namespace attngate {

int64_t bench_heads(int64_t seq) {
    const double heads = 8.0 * (2048.0 / static_cast<double>(seq)) * (2048.0 / static_cast<double>(seq));
    return std::max<int64_t>(1, static_cast<int64_t>(std::llround(heads)));
}

std::vector<BenchConfig> bench_configs(const BenchOptions &o, int all_threads) {
    std::vector<int> threads;
    for (int t : o.threads) {
        const int n = t > 0 ? t : all_threads;
        if (std::find(threads.begin(), threads.end(), n) == threads.end()) threads.push_back(n);
    }
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

/// A kernel instance from init, released by free.
class Instance {
public:
    Instance(const attngate_kernel *kernel, void *handle) : kernel_(kernel), handle_(handle) {}
    ~Instance() {
        if (kernel_->free && handle_) kernel_->free(kernel_, handle_);
    }
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;
    void *handle() const { return handle_; }

private:
    const attngate_kernel *kernel_;
    void *handle_;
};

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

Result<std::vector<BenchRow>> run_bench(const KernelRegistry &reg, const std::vector<BenchConfig> &configs,
                                        const BenchOptions &o) {
    std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<BenchInputs>> inputs;
    std::map<std::pair<std::string, int>, std::unique_ptr<Instance>> instances;
    std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<SgemmCeiling>> ceilings;
    std::map<std::tuple<int64_t, int64_t, int>, size_t> ceiling_request;  // (S, D, threads) -> request
    CountingAllocator alloc;
    std::vector<std::vector<float>> outputs(configs.size());
    std::vector<attngate_problem> problems(configs.size());
    std::vector<TimedCall> requests;
    std::vector<size_t> request_of(configs.size(), SIZE_MAX);

    for (size_t i = 0; i < configs.size(); ++i) {
        const BenchConfig &c = configs[i];
        if (!c.skip_reason.empty()) continue;
        const attngate_kernel *kernel = reg.find(c.kernel);
        if (!kernel) return fail(ErrorKind::Usage, "--kernel {}: no such kernel", c.kernel);
        auto &inst = instances[{c.kernel, c.threads}];
        if (!inst) {
            const attngate_kernel_params params{c.threads, nullptr};
            char err[256] = {0};
            void *handle = kernel->init ? kernel->init(kernel, &params, err, sizeof err) : nullptr;
            if (kernel->init && !handle) return fail(ErrorKind::Infra, "kernel {}: init failed: {}", c.kernel, err);
            inst = std::make_unique<Instance>(kernel, handle);
        }
        auto &in = inputs[{c.seq, c.head_dim, static_cast<int>(c.dtype)}];
        if (!in) in = std::make_unique<BenchInputs>(make_inputs(c.seq, c.heads, c.head_dim, c.dtype));
        outputs[i].assign(static_cast<size_t>(c.seq * c.heads * c.head_dim), 0.0f);
        attngate_problem &p = problems[i];
        p = bench_problem(c, *in, outputs[i].data());
        p.allocator = alloc.abi();
        p.instance = inst->handle();
        request_of[i] = requests.size();
        requests.push_back({c.kernel, [&p, kernel] {
                                char err[256];
                                if (kernel->run(kernel, &p, err, sizeof err) != 0)
                                    fmt::print(stderr, "bench: {} failed: {}\n", kernel->name, err);
                            }});

        auto [it, added] = ceiling_request.try_emplace({c.seq, c.head_dim, c.threads}, requests.size());
        if (!added) continue;
        auto &ceiling = ceilings[{c.seq, c.head_dim, c.threads}];
        auto made = SgemmCeiling::make(c.threads, c.seq, c.head_dim);
        if (!made) return std::unexpected(made.error());
        ceiling = std::move(*made);
        requests.push_back({"sgemm", [g = ceiling.get()] { g->run(); }});
    }

    TimingOptions topt;
    topt.repetitions = o.repetitions;
    topt.min_time_s = o.min_time_s;
    const auto samples = requests.empty() ? std::vector<std::vector<double>>{} : time_calls(requests, topt);

    std::vector<BenchRow> rows;
    for (size_t i = 0; i < configs.size(); ++i) {
        BenchRow r;
        r.config = configs[i];
        if (request_of[i] == SIZE_MAX) {
            r.seconds = r.gflops = r.tokens_per_s = r.ceiling_gflops = NAN;
            rows.push_back(std::move(r));
            continue;
        }
        const BenchConfig &c = configs[i];
        const std::tuple<int64_t, int64_t, int> key{c.seq, c.head_dim, c.threads};
        measure_row(r, samples[request_of[i]], ceilings.at(key)->flops(), samples[ceiling_request.at(key)]);
        rows.push_back(std::move(r));
    }
    return rows;
}

}  // namespace attngate
