// The decode rows of the bench and the memory bandwidth beside them.
#include "run/decode_bench.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "attngate/bf16.hpp"
#include "backend/memory.hpp"
#include "plan/paged.hpp"
#include "io/rng.hpp"
#include "run/memory_bandwidth.hpp"
#include "stats/stats.hpp"

namespace attngate {

double DecodeShape::kv_bytes() const {
    const double elem = dtype == ATTNGATE_DTYPE_BF16 ? 2.0 : 4.0;
    return static_cast<double>(sequences * kv_len * heads_kv * 2 * head_dim) * elem;
}

namespace {

/// One operand tensor of n elements in the shape's dtype, uniform on [-1, 1).
std::unique_ptr<HugeBuffer> operand(const char *stream, int64_t n, attngate_dtype dtype) {
    const CounterRng rng(7, stream);
    auto bytes = std::make_unique<HugeBuffer>(static_cast<size_t>(n) * (dtype == ATTNGATE_DTYPE_BF16 ? 2 : 4));
    for (int64_t i = 0; i < n; ++i) {
        const float x = rng.uniform(static_cast<uint64_t>(i));
        if (dtype == ATTNGATE_DTYPE_BF16) reinterpret_cast<uint16_t *>(bytes->data())[i] = float_to_bf16(x);
        else reinterpret_cast<float *>(bytes->data())[i] = x;
    }
    return bytes;
}

}  // namespace

struct DecodeBench::Impl {
    struct Run {
        std::string kernel;
        int threads;
        const attngate_kernel *table;
        std::unique_ptr<BenchInstance> instance;
        std::vector<float> out;
        attngate_problem problem{};
        size_t request = 0;
    };
    struct Yardstick {
        std::unique_ptr<StreamBandwidth> stream;
        size_t copy = 0, triad = 0;
    };

    DecodeShape shape;
    std::unique_ptr<HugeBuffer> q, k, v;
    std::vector<int32_t> table, kv_lens, cu_q_lens;
    attngate_paged_kv kv{};
    CountingAllocator alloc;
    std::vector<Run> runs;
    std::map<int, Yardstick> yardsticks;

    attngate_problem problem() const {
        attngate_problem p{};
        p.batch = shape.sequences;
        p.seq_q = shape.sequences;
        p.seq_k = shape.kv_len;
        p.heads_q = shape.heads_q;
        p.heads_kv = shape.heads_kv;
        p.head_dim = p.head_dim_v = shape.head_dim;
        p.dtype = shape.dtype;
        p.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
        p.causal = 1;
        p.window_left = p.window_right = -1;
        p.q = q->data();
        p.paged = &kv;
        for (auto &d : p.bias_shape) d = 1;
        return p;
    }
};

DecodeBench::DecodeBench() : impl_(std::make_unique<Impl>()) {}
DecodeBench::~DecodeBench() = default;

Result<std::unique_ptr<DecodeBench>> DecodeBench::make(const KernelRegistry &reg, const BenchOptions &o, const std::vector<int> &threads) {
    std::unique_ptr<DecodeBench> bench(new DecodeBench());
    Impl &m = *bench->impl_;
    const DecodeShape &s = m.shape = o.decode;
    PagedSpec spec;
    spec.kv_lens.assign(static_cast<size_t>(s.sequences), s.kv_len);
    spec.q_lens.assign(static_cast<size_t>(s.sequences), 1);
    spec.page_size = s.page_size;
    spec.pages = spec.pages_needed() + std::max<int64_t>(1, spec.pages_needed() / 4);
    m.table = make_page_layout(spec, 7).table;
    const int64_t slots = spec.pages * s.page_size;
    m.q = operand("bench.decode.q", s.sequences * s.heads_q * s.head_dim, s.dtype);
    m.k = operand("bench.decode.k", slots * s.heads_kv * s.head_dim, s.dtype);
    m.v = operand("bench.decode.v", slots * s.heads_kv * s.head_dim, s.dtype);
    for (int64_t b = 0; b <= s.sequences; ++b) m.cu_q_lens.push_back(static_cast<int32_t>(b));
    m.kv_lens.assign(static_cast<size_t>(s.sequences), static_cast<int32_t>(s.kv_len));
    m.kv = attngate_paged_kv{m.k->data(), m.v->data(), m.table.data(), m.kv_lens.data(), m.cu_q_lens.data(),
                             spec.pages, s.page_size, spec.pages_per_seq()};
    const int64_t stream_bytes = o.stream_bytes > 0 ? o.stream_bytes : stream_array_bytes(last_level_cache_bytes());
    for (int t : threads) {
        m.yardsticks[t].stream = std::make_unique<StreamBandwidth>(t, stream_bytes);
        for (const auto &name : o.decode_kernels) {
            const attngate_kernel *kernel = reg.find(name);
            if (!kernel) return fail(ErrorKind::Usage, "--decode-kernel {}: no such kernel", name);
            if (!(kernel->features & ATTNGATE_FEATURE_PAGED_KV) || kernel->api_version < 3)
                return fail(ErrorKind::Usage, "--decode-kernel {}: the kernel does not take a paged KV cache", name);
            auto inst = BenchInstance::make(kernel, t);
            if (!inst) return std::unexpected(inst.error());
            Impl::Run r{name, t, kernel, std::move(*inst), std::vector<float>(static_cast<size_t>(s.sequences * s.heads_q * s.head_dim))};
            m.runs.push_back(std::move(r));
        }
    }
    for (auto &r : m.runs) {
        r.problem = m.problem();
        r.problem.out = r.out.data();
        r.problem.allocator = m.alloc.abi();
        r.problem.instance = r.instance->handle();
    }
    return bench;
}

void DecodeBench::add_requests(std::vector<TimedCall> &requests) {
    for (auto &r : impl_->runs) {
        r.request = requests.size();
        requests.push_back({"decode " + r.kernel, [&r] {
                                char err[256];
                                if (r.table->run(r.table, &r.problem, err, sizeof err) != 0)
                                    fmt::print(stderr, "bench: {} failed: {}\n", r.kernel, err);
                            }});
    }
    for (auto &[threads, y] : impl_->yardsticks) {
        y.copy = requests.size();
        requests.push_back({"stream copy", [s = y.stream.get()] { s->copy(); }});
        y.triad = requests.size();
        requests.push_back({"stream triad", [s = y.stream.get()] { s->triad(); }});
    }
}

void DecodeBench::collect(const std::vector<std::vector<double>> &samples, BenchResults &out) const {
    std::map<int, BandwidthRow> bandwidth;
    for (const auto &[threads, y] : impl_->yardsticks) {
        BandwidthRow b{threads, y.stream->bytes_per_array()};
        b.copy_gb_per_s = y.stream->copy_bytes() / median(samples[y.copy]) / 1e9;
        b.triad_gb_per_s = y.stream->triad_bytes() / median(samples[y.triad]) / 1e9;
        bandwidth[threads] = b;
        out.bandwidth.push_back(b);
    }
    for (const auto &r : impl_->runs) {
        DecodeRow row;
        row.kernel = r.kernel;
        row.threads = r.threads;
        row.shape = impl_->shape;
        row.samples_s = samples[r.request];
        row.seconds = median(row.samples_s);
        row.tokens_per_s = static_cast<double>(row.shape.sequences) / row.seconds;
        row.kv_gb_per_s = row.shape.kv_bytes() / row.seconds / 1e9;
        row.bandwidth = bandwidth.at(r.threads);
        out.decode.push_back(std::move(row));
    }
}

}  // namespace attngate
