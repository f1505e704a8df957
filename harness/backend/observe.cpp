// In-process kernel observation: output, memory series and the workspace-growth probe.
#include "backend/observe.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/memory.hpp"
#include "io/json_io.hpp"

namespace attngate {

KernelInstance::KernelInstance(const attngate_kernel &kernel, int num_threads) : kernel_(kernel) {
    if (!kernel.init) return;
    const attngate_kernel_params params{num_threads, nullptr};
    char err[512] = {0};
    instance_ = kernel.init(&kernel, &params, err, sizeof err);
    if (!instance_) {
        error_ = bounded_string(err, sizeof err);
        if (error_.empty()) error_ = "init returned NULL";
    }
}

KernelInstance::~KernelInstance() {
    if (instance_ && kernel_.free) kernel_.free(&kernel_, instance_);
}

std::string bounded_string(const char *buffer, size_t capacity) {
    return std::string(buffer, ::strnlen(buffer, capacity));
}

CaseSpec doubled_sequences(const CaseSpec &c) {
    CaseSpec d = c;
    d.seq_q *= 2;
    d.seq_k *= 2;
    if (!d.bias_shape.empty()) {
        if (d.bias_shape[2] == c.seq_q) d.bias_shape[2] = d.seq_q;
        if (d.bias_shape[3] == c.seq_k) d.bias_shape[3] = d.seq_k;
    }
    return d;
}

namespace {

struct Call {
    int rc;
    int64_t abi_peak;  ///< bytes above the live bytes at the start of the call
};

/// One kernel and everything its calls share.
struct Caller {
    const attngate_kernel &kernel;
    const KernelSpec &spec;
    void *instance;

    Call call(const CaseSpec &c, const CaseInputs &in, float *out, CountingAllocator &alloc, std::string *error) const {
        attngate_problem p = make_problem(c, in, out, alloc.abi(), spec.block_q, spec.block_k);
        p.instance = instance;
        alloc.reset_peak();
        const int64_t before = alloc.live_bytes();
        char err[512] = {0};
        const int rc = kernel.run(&kernel, &p, err, sizeof err);
        if (rc != 0 && error) *error = bounded_string(err, sizeof err);
        return {rc, alloc.peak_bytes() - before};
    }

    /// Peak ABI bytes and peak RSS growth of one call on a fresh allocator.
    std::pair<int64_t, int64_t> one_call_peaks(const CaseSpec &c, const CaseInputs &in, float *out) const {
        CountingAllocator alloc;
        const ProcessMemory before = sample_process_memory();
        const bool rss_ok = reset_peak_rss();
        const Call done = call(c, in, out, alloc, nullptr);
        const int64_t hwm = peak_rss_bytes();
        return {done.abi_peak, rss_ok && hwm >= 0 ? std::max<int64_t>(0, hwm - before.rss_bytes) : -1};
    }
};

MemoryObservation observe_memory(const Caller &k, const Invocation &inv, float *out, const ObserveRequest &o) {
    const CaseSpec &c = *inv.spec;
    const CaseInputs &in = *inv.inputs;
    MemoryObservation m;
    m.abi_measured = true;
    std::tie(m.abi_peak_bytes, m.rss_peak_delta_bytes) = k.one_call_peaks(c, in, out);

    CountingAllocator alloc;
    m.heap_live_bytes.reserve(static_cast<size_t>(o.memory_calls));
    m.rss_bytes.reserve(static_cast<size_t>(o.memory_calls));
    // Warm-up repeats the series' own cycle (call, then sample): the sampler's buffer moves
    // malloc's free lists too, and the first cycle's settling must not enter the series as
    // a step that reads as a leak.
    for (int64_t i = 0; i < o.warmup_calls; ++i) {
        k.call(c, in, out, alloc, nullptr);
        sample_process_memory();
    }
    for (int64_t i = 0; i < o.memory_calls; ++i) {
        const Call call = k.call(c, in, out, alloc, nullptr);
        m.abi_peak_bytes = std::max(m.abi_peak_bytes, call.abi_peak);
        const ProcessMemory now = sample_process_memory();
        m.heap_live_bytes.push_back(now.heap_bytes);
        m.rss_bytes.push_back(now.rss_bytes);
    }
    m.calls = o.warmup_calls + o.memory_calls;
    m.abi_leaked_bytes = alloc.live_bytes();
    m.abi_unfreed_allocations = alloc.allocations() - alloc.frees();

    if (k.kernel.workspace_growth != ATTNGATE_WORKSPACE_UNSPECIFIED) {
        const CaseSpec probe = doubled_sequences(c);
        if (probe.estimated_bytes() <= o.memory_budget_bytes) {
            const CaseInputs probe_in = generate_inputs(*inv.suite, probe);
            std::vector<float> probe_out(static_cast<size_t>(output_elements(probe)));
            m.probe_seq_q = probe.seq_q;
            m.probe_seq_k = probe.seq_k;
            std::tie(m.probe_abi_peak_bytes, m.probe_rss_peak_delta_bytes) = k.one_call_peaks(probe, probe_in, probe_out.data());
        }
    }
    return m;
}

}  // namespace

Observation observe_kernel(const attngate_kernel &kernel, const Invocation &inv, const ObserveRequest &req) {
    Observation o;
    const KernelInstance instance(kernel, 0);
    if (!instance.error().empty()) {
        o.kernel_rc = -1;
        o.kernel_error = "init failed: " + instance.error();
        return o;
    }
    const Caller caller{kernel, *inv.kernel, instance.get()};
    o.output.assign(static_cast<size_t>(output_elements(*inv.spec)), 0.0f);
    CountingAllocator alloc;
    const auto t0 = std::chrono::steady_clock::now();
    o.kernel_rc = caller.call(*inv.spec, *inv.inputs, o.output.data(), alloc, &o.kernel_error).rc;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.kernel_rc == 0 && req.memory) {
        std::vector<float> scratch(o.output.size());
        o.memory = observe_memory(caller, inv, scratch.data(), req);
    }
    return o;
}

// --- serialisation: [u64 json length][json][u64 float count][floats][end marker] -------

namespace {
constexpr char kEndMarker[8] = {'A', 'G', 'O', 'B', 'S', 'E', 'N', 'D'};

json::array to_array(const std::vector<int64_t> &v) { return json::array(v.begin(), v.end()); }

std::vector<int64_t> from_array(const json::value &v) {
    std::vector<int64_t> out;
    for (const auto &e : v.as_array()) out.push_back(e.as_int64());
    return out;
}

json::object memory_to_json(const MemoryObservation &m) {
    return json::object{{"calls", m.calls}, {"abi_measured", m.abi_measured}, {"abi_peak_bytes", m.abi_peak_bytes},
                        {"abi_leaked_bytes", m.abi_leaked_bytes}, {"abi_unfreed_allocations", m.abi_unfreed_allocations},
                        {"heap_live_bytes", to_array(m.heap_live_bytes)}, {"rss_bytes", to_array(m.rss_bytes)},
                        {"rss_peak_delta_bytes", m.rss_peak_delta_bytes}, {"probe_seq_q", m.probe_seq_q},
                        {"probe_seq_k", m.probe_seq_k}, {"probe_abi_peak_bytes", m.probe_abi_peak_bytes},
                        {"probe_rss_peak_delta_bytes", m.probe_rss_peak_delta_bytes}};
}

MemoryObservation memory_from_json(const json::object &mo) {
    MemoryObservation x;
    x.calls = mo.at("calls").as_int64();
    x.abi_measured = mo.at("abi_measured").as_bool();
    x.abi_peak_bytes = mo.at("abi_peak_bytes").as_int64();
    x.abi_leaked_bytes = mo.at("abi_leaked_bytes").as_int64();
    x.abi_unfreed_allocations = mo.at("abi_unfreed_allocations").as_int64();
    x.heap_live_bytes = from_array(mo.at("heap_live_bytes"));
    x.rss_bytes = from_array(mo.at("rss_bytes"));
    x.rss_peak_delta_bytes = mo.at("rss_peak_delta_bytes").as_int64();
    x.probe_seq_q = mo.at("probe_seq_q").as_int64();
    x.probe_seq_k = mo.at("probe_seq_k").as_int64();
    x.probe_abi_peak_bytes = mo.at("probe_abi_peak_bytes").as_int64();
    x.probe_rss_peak_delta_bytes = mo.at("probe_rss_peak_delta_bytes").as_int64();
    return x;
}
}  // namespace

std::string serialize_observation(const Observation &o) {
    json::object meta{{"kernel_rc", o.kernel_rc}, {"kernel_error", o.kernel_error}, {"seconds", o.seconds}};
    if (o.memory) meta["memory"] = memory_to_json(*o.memory);
    const std::string text = json::serialize(meta);
    std::string out;
    const uint64_t len = text.size(), n = o.output.size();
    out.append(reinterpret_cast<const char *>(&len), sizeof len).append(text);
    out.append(reinterpret_cast<const char *>(&n), sizeof n);
    out.append(reinterpret_cast<const char *>(o.output.data()), n * sizeof(float));
    out.append(kEndMarker, sizeof kEndMarker);
    return out;
}

std::optional<Observation> parse_observation(std::string_view bytes) {
    uint64_t len = 0, n = 0;
    if (bytes.size() < sizeof len) return std::nullopt;
    std::memcpy(&len, bytes.data(), sizeof len);
    if (len > bytes.size() - sizeof len || bytes.size() - sizeof len - len < sizeof n) return std::nullopt;
    const std::string_view text = bytes.substr(sizeof len, len);
    std::memcpy(&n, bytes.data() + sizeof len + len, sizeof n);
    const size_t floats_at = sizeof len + len + sizeof n;
    if (n > (bytes.size() - floats_at) / sizeof(float)) return std::nullopt;
    const size_t end_at = floats_at + n * sizeof(float);
    if (bytes.size() != end_at + sizeof kEndMarker || bytes.substr(end_at) != std::string_view(kEndMarker, sizeof kEndMarker))
        return std::nullopt;
    boost::system::error_code ec;
    const json::value meta = json::parse(text, ec);
    if (ec || !meta.is_object()) return std::nullopt;
    try {
        Observation o;
        const auto &m = meta.as_object();
        o.kernel_rc = static_cast<int>(m.at("kernel_rc").as_int64());
        o.kernel_error = std::string(m.at("kernel_error").as_string());
        o.seconds = m.at("seconds").to_number<double>();
        if (const auto *mem = m.if_contains("memory")) o.memory = memory_from_json(mem->as_object());
        o.output.resize(n);
        std::memcpy(o.output.data(), bytes.data() + floats_at, n * sizeof(float));
        return o;
    } catch (const std::exception &) {  // Boost.JSON accessors throw on a wrong shape
        return std::nullopt;
    }
}

}  // namespace attngate
