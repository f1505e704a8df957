// The protocol's messages (docs/protocol.md): requests built and answers decoded, apart
// from the adapter process, the calls and the retries (remote_backend.cpp).
#include "backend/remote_protocol.hpp"

#include "io/json_io.hpp"
#include "plan/inputs.hpp"

namespace attngate {

uint32_t workspace_from_name(std::string_view s) {
    if (s == "constant") return ATTNGATE_WORKSPACE_CONSTANT;
    if (s == "linear") return ATTNGATE_WORKSPACE_LINEAR;
    if (s == "quadratic") return ATTNGATE_WORKSPACE_QUADRATIC;
    return ATTNGATE_WORKSPACE_UNSPECIFIED;
}

std::vector<int64_t> int_series(const json::object &o, std::string_view key) {
    std::vector<int64_t> out;
    if (const auto *v = o.if_contains(key); v && v->is_array())
        for (const auto &x : v->get_array())
            if (x.is_number()) out.push_back(static_cast<int64_t>(x.to_number<double>()));
    return out;
}

std::string string_at(const json::object &o, std::string_view key) {
    if (const auto *v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
    return {};
}

namespace {

/// A paged case's "paged" object (docs/protocol.md): the batch's lengths and the pool.
json::object protocol_paged(const PagedSpec &p) {
    return json::object{{"q_lens", json::array(p.q_lens.begin(), p.q_lens.end())},
                        {"kv_lens", json::array(p.kv_lens.begin(), p.kv_lens.end())},
                        {"page_size", p.page_size},
                        {"pages", p.pages},
                        {"pages_per_seq", p.pages_per_seq()},
                        {"layout", p.scattered ? "scattered" : "contiguous"}};
}

}  // namespace

json::object protocol_case(const CaseSpec &c, const KernelSpec &k) {
    json::object o{{"batch", c.batch},       {"seq_q", c.seq_q},       {"seq_k", c.seq_k},
                   {"heads_q", c.heads_q},   {"heads_kv", c.heads_kv}, {"head_dim", c.head_dim},
                   {"head_dim_v", c.head_dim_v}, {"dtype", dtype_name(c.dtype)},
                   {"scale", static_cast<double>(c.effective_scale())}, {"softcap", c.softcap},
                   {"causal", c.causal},     {"causal_alignment", c.top_left ? "top_left" : "bottom_right"},
                   {"window", json::array{c.window_left, c.window_right}},
                   {"segment_ids", c.segments > 0 || c.segments_per_token},
                   {"block_q", k.block_q},   {"block_k", k.block_k}};
    o["bias_shape"] = c.bias_shape.empty() ? json::value(nullptr) : json::value(json::array(c.bias_shape.begin(), c.bias_shape.end()));
    if (c.paged) o["paged"] = protocol_paged(*c.paged);
    return o;
}

std::vector<int64_t> protocol_output_shape(const CaseSpec &c) {
    if (c.paged) return {c.seq_q, c.heads_q, c.head_dim_v};  // [total_q, Hq, Dv]: the batch's query tokens
    return output_shape(c);
}

/// Fills o from a kernel call's answer that said ok: false; true when it did.
bool kernel_declined(const json::object &body, Observation &o) {
    const auto *ok = body.if_contains("ok");
    if (ok && ok->is_bool() && ok->get_bool()) return false;
    if (std::string why = string_at(body, "unsupported"); !why.empty()) {
        o.unsupported = why;
        return true;
    }
    o.kernel_rc = 1;
    o.kernel_error = string_at(body, "error");
    if (o.kernel_error.empty()) o.kernel_error = "the adapter answered ok: false without an error";
    return true;
}

Result<std::vector<KernelInfo>> decode_kernels(const json::object &body, const std::string &origin) {
    const auto *ks = body.if_contains("kernels");
    if (!ks || !ks->is_array()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: expected {{\"kernels\": [...]}}", origin);
    std::vector<KernelInfo> kernels;
    for (const auto &kv : ks->get_array()) {
        if (!kv.is_object()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: a kernel that is not an object", origin);
        const auto &o = kv.get_object();
        KernelInfo k;
        k.name = string_at(o, "name");
        k.version = string_at(o, "version");
        k.description = string_at(o, "description");
        k.origin = origin;
        k.workspace_growth = workspace_from_name(string_at(o, "workspace_growth"));
        std::vector<std::string> names, unknown;
        if (const auto *f = o.if_contains("features"); f && f->is_array())
            for (const auto &x : f->get_array())
                if (x.is_string()) names.emplace_back(x.get_string());
        k.features = feature_bits(names, unknown);
        if (const auto *c = o.if_contains("conventions"); c && c->is_object()) k.conventions = c->get_object();
        if (const auto *r = o.if_contains("rounds_to_case_dtype"); r && r->is_array())
            for (const auto &x : r->get_array()) {
                if (x == "output") k.rounding.output = true;
                else if (x == "probabilities") k.rounding.probabilities = true;
                else return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: {}: rounds_to_case_dtype: expected \"output\" or "
                                 "\"probabilities\", got {}", origin, k.name, json::serialize(x));
            }
        if (k.name.empty()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: a kernel without a name", origin);
        kernels.push_back(std::move(k));
    }
    return kernels;
}

std::vector<std::string> decode_load_errors(const json::object &body) {
    std::vector<std::string> out;
    if (const auto *errs = body.if_contains("errors"); errs && errs->is_array())
        for (const auto &e : errs->get_array())
            if (e.is_object()) out.push_back(string_at(e.get_object(), "source") + ": " + string_at(e.get_object(), "error"));
    return out;
}

MemoryObservation decode_memory(const json::object &body, int64_t calls) {
    MemoryObservation m;
    m.calls = calls;
    m.rss_bytes = int_series(body, "rss_bytes");
    m.live_arrays = int_series(body, "live_arrays");
    m.live_array_bytes = int_series(body, "live_array_bytes");
    m.device_bytes_in_use = int_series(body, "device_bytes_in_use");
    if (const auto p = number_at(body, "device_peak_bytes")) m.device_peak_bytes = static_cast<int64_t>(*p);
    return m;
}

}  // namespace attngate
