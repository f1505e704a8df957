// In-process kernel observation: output, memory series and the workspace-growth probe.
#include "backend/observe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "backend/memory.hpp"
#include "backend/watch.hpp"
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
    return valid_utf8(std::string_view(buffer, ::strnlen(buffer, capacity)));
}

CaseSpec doubled_sequences(const CaseSpec &c) {
    CaseSpec d = c;
    d.seq_q *= 2;
    d.seq_k *= 2;
    if (d.paged) {  // every sequence twice as long, in a pool twice as large
        PagedSpec &p = *d.paged;
        for (auto &n : p.q_lens) n *= 2;
        for (auto &n : p.kv_lens) n *= 2;
        p.pages = std::max(2 * p.pages, p.pages_needed() + (p.has_padding() ? 1 : 0));
    }
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

/// One kernel and everything its calls share: one audited allocator for every call of the
/// observation, the kernel's private inputs, and a guarded, poisoned output.
struct Caller {
    const attngate_kernel &kernel;
    const KernelSpec &spec;
    void *instance;
    CountingAllocator alloc;
    std::vector<std::string> violations;

    Call call(const CaseSpec &c, const CaseInputs &in, float *out, CountingAllocator &a, std::string *error) {
        attngate_problem p = make_problem(c, in, out, a.abi(), spec.block_q, spec.block_k);
        p.instance = instance;
        a.reset_peak();
        const int64_t before = a.live_bytes();
        char err[512] = {0};
        const int rc = kernel.run(&kernel, &p, err, sizeof err);
        if (rc != 0 && error) *error = bounded_string(err, sizeof err);
        return {rc, a.peak_bytes() - before};
    }

    /// A call with every watch on: poison, then input, output-guard and allocator checks.
    Call watched(const CaseSpec &c, PrivateInputs &in, GuardedOutput &out, int pattern, std::string *error) {
        out.poison(pattern);
        const Call done = call(c, in.get(), out.data(), alloc, error);
        in.check(violations);
        out.check(violations);
        alloc.audit();
        return done;
    }

    /// Peak ABI bytes and peak RSS growth of one call on its own, audited, allocator.
    std::pair<int64_t, int64_t> one_call_peaks(const CaseSpec &c, const CaseInputs &in) {
        CountingAllocator probe;
        GuardedOutput out(static_cast<size_t>(output_elements(c)));
        const ProcessMemory before = sample_process_memory();
        const bool rss_ok = reset_peak_rss();
        const Call done = call(c, in, out.data(), probe, nullptr);
        const int64_t hwm = peak_rss_bytes();
        out.check(violations);
        probe.audit();
        violations.insert(violations.end(), probe.violations().begin(), probe.violations().end());
        return {done.abi_peak, rss_ok && hwm >= 0 ? std::max<int64_t>(0, hwm - before.rss_bytes) : -1};
    }
};

/// Warm-up and measured calls on the observation's allocator (whatever the first calls
/// retained is already held), then the growth probe. Each output is held against the
/// first: a difference is non-determinism across calls.
MemoryObservation observe_memory(Caller &k, const Invocation &inv, PrivateInputs &in, GuardedOutput &out,
                                 const std::vector<float> &first, std::optional<Nondeterminism> &nd, const ObserveRequest &o) {
    const CaseSpec &c = *inv.spec;
    MemoryObservation m;
    m.abi_measured = true;
    m.abi_retained_bytes = k.alloc.live_bytes();
    m.heap_live_bytes.reserve(static_cast<size_t>(o.memory_calls));
    m.rss_bytes.reserve(static_cast<size_t>(o.memory_calls));
    const auto compared = [&] {
        if (nd) return;
        const OutputDifference d = compare_outputs(first, out.view());
        if (d.elements) nd = Nondeterminism{"calls", d.elements, d.max_abs, false};
    };
    // Warm-up repeats the series' own cycle (call, compare, sample), so whatever the first
    // cycles settle for good is settled before the series starts.
    for (int64_t i = 0; i < o.warmup_calls; ++i) {
        if (k.watched(c, in, out, static_cast<int>(i), nullptr).rc == 0) compared();
        sample_process_memory();
    }
    const int64_t start_live = k.alloc.live_bytes(), start_allocs = k.alloc.allocations() - k.alloc.frees();
    for (int64_t i = 0; i < o.memory_calls; ++i) {
        const Call call = k.watched(c, in, out, static_cast<int>(i), nullptr);
        if (call.rc == 0) compared();
        m.abi_peak_bytes = std::max(m.abi_peak_bytes, call.abi_peak);
        const ProcessMemory now = sample_process_memory();
        m.heap_live_bytes.push_back(now.heap_bytes);
        m.rss_bytes.push_back(now.rss_bytes);
    }
    m.calls = o.warmup_calls + o.memory_calls;
    m.abi_leaked_bytes = k.alloc.live_bytes() - start_live;
    m.abi_unfreed_allocations = k.alloc.allocations() - k.alloc.frees() - start_allocs;

    if (k.kernel.workspace_growth != ATTNGATE_WORKSPACE_UNSPECIFIED) {
        const CaseSpec probe = doubled_sequences(c);
        if (probe.estimated_bytes() <= o.memory_budget_bytes) {
            const CaseInputs probe_in = generate_inputs(*inv.suite, probe);
            m.probe_seq_q = probe.seq_q;
            m.probe_seq_k = probe.seq_k;
            std::tie(m.probe_abi_peak_bytes, m.probe_rss_peak_delta_bytes) = k.one_call_peaks(probe, probe_in);
        }
    }
    return m;
}

/// Which kind of unreadable slot the NaN outputs came from, for a paged case whose output had
/// a NaN: the kernel runs with every unreadable slot finite (what NaN is left is the case's
/// own), then with only one kind left NaN, for each kind; an output NaN there and finite
/// without any is that kind's doing.
std::optional<UnreadableReads> trace_unreadable(Caller &k, const Invocation &inv, const std::vector<float> &output) {
    const CaseSpec &c = *inv.spec;
    if (!c.paged || std::none_of(output.begin(), output.end(), [](float x) { return std::isnan(x); })) return std::nullopt;
    const auto nan_with = [&](std::initializer_list<Unreadable> finite) -> std::optional<std::vector<bool>> {
        GuardedOutput out(output.size());
        if (k.call(c, with_finite(*inv.inputs, c, finite), out.data(), k.alloc, nullptr).rc != 0) return std::nullopt;
        std::vector<bool> nan(output.size());
        for (size_t i = 0; i < output.size(); ++i) nan[i] = std::isnan(out.view()[i]);
        return nan;
    };
    const auto own = nan_with({Unreadable::PastKvLen, Unreadable::OutsideTable});
    const auto past = nan_with({Unreadable::OutsideTable}), outside = nan_with({Unreadable::PastKvLen});
    if (!own || !past || !outside) return std::nullopt;
    UnreadableReads u;
    for (size_t i = 0; i < output.size(); ++i) {
        if ((*own)[i]) continue;
        if ((*past)[i] && u.past_kv_len++ == 0) u.first_past_kv_len = static_cast<int64_t>(i);
        if ((*outside)[i] && u.outside_table++ == 0) u.first_outside_table = static_cast<int64_t>(i);
    }
    return u;
}

}  // namespace

Observation observe_kernel(const attngate_kernel &kernel, const Invocation &inv, const ObserveRequest &req) {
    Observation o;
    const KernelInstance instance(kernel, inv.suite->threads);
    if (!instance.error().empty()) {
        o.host_error = "kernel init failed: " + instance.error();
        return o;
    }
    Caller caller{kernel, *inv.kernel, instance.get(), {}, {}};
    o.contract_watched = true;
    const CaseSpec &c = *inv.spec;
    PrivateInputs in(*inv.inputs);
    GuardedOutput out(static_cast<size_t>(output_elements(c)));

    const ProcessMemory rss_before = sample_process_memory();
    const bool rss_ok = req.memory && reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    const Call first = caller.watched(c, in, out, 0, &o.kernel_error);
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int64_t hwm = rss_ok ? peak_rss_bytes() : -1;
    o.kernel_rc = first.rc;
    o.output.assign(out.view().begin(), out.view().end());
    if (o.kernel_rc == 0) {
        // The same call with the other poison: a kernel that reads its output before
        // writing it, or that is not deterministic, shows here.
        if (caller.watched(c, in, out, 1, nullptr).rc == 0)
            if (const OutputDifference d = compare_outputs(o.output, out.view()); d.elements) {
                // Each poison once more: an output that follows the poison both times read
                // it; anything else (a kernel alternating between calls) is non-determinism.
                const std::vector<float> second(out.view().begin(), out.view().end());
                caller.watched(c, in, out, 1, nullptr);
                bool follows_poison = compare_outputs(second, out.view()).elements == 0;
                caller.watched(c, in, out, 0, nullptr);
                follows_poison = follows_poison && compare_outputs(o.output, out.view()).elements == 0;
                o.nondeterminism = Nondeterminism{"calls", d.elements, d.max_abs, follows_poison};
            }
        if (req.memory) {
            o.memory = observe_memory(caller, inv, in, out, o.output, o.nondeterminism, req);
            o.memory->abi_peak_bytes = std::max(o.memory->abi_peak_bytes, first.abi_peak);
            o.memory->rss_peak_delta_bytes = hwm >= 0 ? std::max<int64_t>(0, hwm - rss_before.rss_bytes) : -1;
        }
        o.unreadable = trace_unreadable(caller, inv, o.output);  // after the memory series: it is not one of its calls
    }
    caller.alloc.audit();
    std::vector<std::string> all = caller.violations;
    all.insert(all.end(), caller.alloc.violations().begin(), caller.alloc.violations().end());
    for (const auto &v : all)
        if (std::find(o.contract_violations.begin(), o.contract_violations.end(), v) == o.contract_violations.end())
            o.contract_violations.push_back(v);
    return o;
}

// --- serialisation: [u64 json length][json][u64 float count][floats][end marker] -------

namespace {
constexpr char kEndMarker[8] = {'A', 'G', 'O', 'B', 'S', 'E', 'N', 'D'};

json::array to_array(const std::vector<int64_t> &v) { return json::array(v.begin(), v.end()); }

}  // namespace

json::object memory_to_json(const MemoryObservation &m) {
    return json::object{{"calls", m.calls}, {"abi_measured", m.abi_measured}, {"abi_peak_bytes", m.abi_peak_bytes},
                        {"abi_leaked_bytes", m.abi_leaked_bytes}, {"abi_unfreed_allocations", m.abi_unfreed_allocations},
                        {"abi_retained_bytes", m.abi_retained_bytes},
                        {"heap_live_bytes", to_array(m.heap_live_bytes)}, {"rss_bytes", to_array(m.rss_bytes)},
                        {"live_arrays", to_array(m.live_arrays)}, {"live_array_bytes", to_array(m.live_array_bytes)},
                        {"device_bytes_in_use", to_array(m.device_bytes_in_use)}, {"device_peak_bytes", m.device_peak_bytes},
                        {"rss_peak_delta_bytes", m.rss_peak_delta_bytes}, {"probe_seq_q", m.probe_seq_q},
                        {"probe_seq_k", m.probe_seq_k}, {"probe_abi_peak_bytes", m.probe_abi_peak_bytes},
                        {"probe_rss_peak_delta_bytes", m.probe_rss_peak_delta_bytes}};
}

Result<MemoryObservation> memory_from_json(const json::value &v, const std::string &file, const std::string &path) {
    ObjectReader r(v, file, path);
    MemoryObservation x;
    x.calls = r.required_integer("calls", 0);
    x.abi_measured = r.boolean("abi_measured", false);
    x.abi_peak_bytes = r.required_integer("abi_peak_bytes", 0);
    // Negative when the kernel gave back, during the measured calls, what it kept before them.
    x.abi_leaked_bytes = r.required_integer("abi_leaked_bytes");
    x.abi_unfreed_allocations = r.required_integer("abi_unfreed_allocations");
    x.abi_retained_bytes = r.required_integer("abi_retained_bytes", 0);
    x.heap_live_bytes = r.integer_array("heap_live_bytes", {});
    x.rss_bytes = r.integer_array("rss_bytes", {});
    x.live_arrays = r.integer_array("live_arrays", {});
    x.live_array_bytes = r.integer_array("live_array_bytes", {});
    x.device_bytes_in_use = r.integer_array("device_bytes_in_use", {});
    x.device_peak_bytes = r.integer("device_peak_bytes", -1, -1);
    x.rss_peak_delta_bytes = r.integer("rss_peak_delta_bytes", -1, -1);
    x.probe_seq_q = r.integer("probe_seq_q", 0, 0);
    x.probe_seq_k = r.integer("probe_seq_k", 0, 0);
    x.probe_abi_peak_bytes = r.integer("probe_abi_peak_bytes", -1, -1);
    x.probe_rss_peak_delta_bytes = r.integer("probe_rss_peak_delta_bytes", -1, -1);
    if (auto e = r.finish()) return std::unexpected(*e);
    return x;
}

std::string serialize_observation(const Observation &o) {
    json::object meta{{"kernel_rc", o.kernel_rc}, {"kernel_error", o.kernel_error}, {"host_error", o.host_error}, {"seconds", o.seconds}};
    if (o.memory) meta["memory"] = memory_to_json(*o.memory);
    meta["contract_violations"] = json::array(o.contract_violations.begin(), o.contract_violations.end());
    meta["contract_watched"] = o.contract_watched;
    if (const auto &n = o.nondeterminism)
        meta["nondeterminism"] = json::object{{"across", n->across}, {"elements", n->elements}, {"max_abs", n->max_abs},
                                              {"reads_output", n->reads_output}};
    if (const auto &u = o.unreadable)
        meta["unreadable"] = json::object{{"past_kv_len", u->past_kv_len}, {"outside_table", u->outside_table},
                                          {"first_past_kv_len", u->first_past_kv_len}, {"first_outside_table", u->first_outside_table}};
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
        o.host_error = std::string(m.at("host_error").as_string());
        for (const auto &v : m.at("contract_violations").as_array()) o.contract_violations.emplace_back(v.as_string());
        o.contract_watched = m.at("contract_watched").as_bool();
        if (const auto *n = m.if_contains("nondeterminism")) {
            const auto &no = n->as_object();
            o.nondeterminism = Nondeterminism{std::string(no.at("across").as_string()), no.at("elements").as_int64(),
                                              no.at("max_abs").to_number<double>(), no.at("reads_output").as_bool()};
        }
        if (const auto *u = m.if_contains("unreadable")) {
            const auto &uo = u->as_object();
            o.unreadable = UnreadableReads{uo.at("past_kv_len").as_int64(), uo.at("outside_table").as_int64(),
                                           uo.at("first_past_kv_len").as_int64(), uo.at("first_outside_table").as_int64()};
        }
        o.seconds = m.at("seconds").to_number<double>();
        if (const auto *mem = m.if_contains("memory")) {
            auto memory = memory_from_json(*mem, "an isolated child's observation", "$.memory");
            if (!memory) return std::nullopt;
            o.memory = std::move(*memory);
        }
        o.output.resize(n);
        if (n) std::memcpy(o.output.data(), bytes.data() + floats_at, n * sizeof(float));  // no output: data() may be null
        return o;
    } catch (const std::exception &) {  // Boost.JSON accessors throw on a wrong shape
        return std::nullopt;
    }
}

}  // namespace attngate
