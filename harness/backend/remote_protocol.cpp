// The remote protocol's requests and answers: pure functions over JSON and bytes.
#include "backend/remote_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/files.hpp"
#include "io/http_client.hpp"
#include "io/json_io.hpp"
#include "plan/inputs.hpp"
#include "plan/paged.hpp"

namespace attngate {

namespace {

std::string string_at(const json::object &o, std::string_view key) {
    if (const auto *v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
    return {};
}

/// A value as an error message shows it: JSON, cut short.
std::string shown(const json::value &v) {
    std::string s = json::serialize(v);
    return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

uint32_t workspace_from_name(std::string_view s) {
    if (s == "constant") return ATTNGATE_WORKSPACE_CONSTANT;
    if (s == "linear") return ATTNGATE_WORKSPACE_LINEAR;
    if (s == "quadratic") return ATTNGATE_WORKSPACE_QUADRATIC;
    return ATTNGATE_WORKSPACE_UNSPECIFIED;
}

/// A time in seconds at `key`: absent or null is "not reported"; anything else must be a
/// finite number in [0, kMaxRemoteSeconds] (a time of -1e308 or 1e308 is no measurement).
Decoded<std::optional<double>> seconds_at(const json::object &o, std::string_view key) {
    const auto *v = o.if_contains(key);
    if (!v || v->is_null()) return std::nullopt;
    const double s = v->is_number() ? v->to_number<double>() : std::nan("");
    if (!std::isfinite(s) || s < 0 || s > kMaxRemoteSeconds)
        return std::unexpected(fmt::format("$.{}: expected a time in [0, {:g}] s, got {}", key, kMaxRemoteSeconds, shown(*v)));
    return s;
}

/// A count (items, bytes): an integer in [0, kMaxRemoteCount]. A double such as 1e19 has
/// no int64 value at all; converting it unchecked is undefined behaviour.
Decoded<int64_t> count_of(const json::value &v, const std::string &path) {
    const auto bad = [&] { return std::unexpected(fmt::format("{}: expected a count, an integer in [0, 2^53], got {}", path, shown(v))); };
    if (v.is_int64()) return v.get_int64() >= 0 && v.get_int64() <= static_cast<int64_t>(kMaxRemoteCount) ? Decoded<int64_t>(v.get_int64()) : bad();
    if (v.is_uint64()) return v.get_uint64() <= static_cast<uint64_t>(kMaxRemoteCount) ? Decoded<int64_t>(static_cast<int64_t>(v.get_uint64())) : bad();
    if (!v.is_double()) return bad();
    const double d = v.get_double();
    if (!std::isfinite(d) || d < 0 || d > kMaxRemoteCount || d != std::floor(d)) return bad();
    return static_cast<int64_t>(d);
}

/// One count per measured call at `key`. Absent or null, or with a null element (the
/// adapter could not read it for some call), the series is not measured: empty.
Decoded<std::vector<int64_t>> series_at(const json::object &o, std::string_view key, int64_t calls) {
    const auto *v = o.if_contains(key);
    if (!v || v->is_null()) return std::vector<int64_t>{};
    if (!v->is_array()) return std::unexpected(fmt::format("$.{}: expected an array of counts, got {}", key, shown(*v)));
    const auto &a = v->get_array();
    if (static_cast<int64_t>(a.size()) != calls)
        return std::unexpected(fmt::format("$.{}: expected one count per measured call ({}), got {}", key, calls, a.size()));
    std::vector<int64_t> out;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].is_null()) return std::vector<int64_t>{};
        auto n = count_of(a[i], fmt::format("$.{}[{}]", key, i));
        if (!n) return std::unexpected(n.error());
        out.push_back(*n);
    }
    return out;
}

/// One kernel of GET /v1/kernels, held to the rules of a plugin's kernel table.
Decoded<KernelInfo> decode_kernel(const json::value &kv, size_t index, const std::string &origin) {
    const std::string at = fmt::format("$.kernels[{}]", index);
    if (!kv.is_object()) return std::unexpected(at + ": expected a kernel object");
    const auto &o = kv.get_object();
    KernelInfo k;
    k.name = string_at(o, "name");
    k.version = string_at(o, "version");
    k.description = string_at(o, "description");
    if (auto why = kernel_name_problem(k.name); !why.empty()) return std::unexpected(fmt::format("{}: {}", at, why));
    for (const auto &[text, field] : {std::pair{&k.version, "version"}, {&k.description, "description"}})
        if (auto why = kernel_text_problem(*text, field); !why.empty()) return std::unexpected(fmt::format("{} ({}): {}", at, k.name, why));
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
            else return std::unexpected(fmt::format("{} ({}): rounds_to_case_dtype: expected \"output\" or \"probabilities\", got {}", at,
                                                    k.name, shown(x)));
        }
    return k;
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
    if (c.paged) o["paged"] = paged_params(*c.paged);
    return o;
}

std::vector<int64_t> protocol_output_shape(const CaseSpec &c) {
    if (c.paged) return {c.seq_q, c.heads_q, c.head_dim_v};  // [total_q, Hq, Dv]: the batch's query tokens
    return output_shape(c);
}

json::value call_request(const Invocation &inv, const json::object &inputs, json::object extra) {
    extra["kernel"] = inv.kernel->kernel;
    extra["case"] = protocol_case(*inv.spec, *inv.kernel);
    extra["inputs"] = inputs;
    return extra;
}

Decoded<json::object> decode_answer(long status, std::string_view body, const std::string &what) {
    auto v = body.empty() ? Result<json::value>(json::object{}) : parse_json(body, "its body");
    std::string detail;
    if (v && v->is_object()) detail = string_at(v->get_object(), "error");
    if (status < 200 || status >= 300)
        return std::unexpected(fmt::format("{}: HTTP {}{}", what, status, detail.empty() ? "" : ": " + detail));
    if (!v || !v->is_object())
        return std::unexpected(fmt::format("{}: the answer is not a JSON object (not the attngate protocol){}", what, v ? "" : "; " + v.error().message));
    return std::move(v->get_object());
}

std::string protocol_mismatch(const json::object &hello) {
    constexpr std::string_view where = "(docs/protocol.md#versions)";
    const auto *protocol = hello.if_contains("protocol");
    if (!protocol)
        return fmt::format("announces no attngate protocol version (GET /v1/hello has no \"protocol\"), this "
                           "attngate speaks {}: not an attngate adapter, or one older than the version handshake {}",
                           kRemoteProtocol, where);
    std::error_code ec;
    const auto version = protocol->to_number<int64_t>(ec);
    if (ec || version < 1)
        return fmt::format("announces attngate protocol {}, not a version number; this attngate speaks {} {}",
                           protocol->is_number() ? fmt::format("{:g}", protocol->to_number<double>()) : shown(*protocol),
                           kRemoteProtocol, where);
    if (version == kRemoteProtocol) return {};
    return fmt::format("speaks attngate protocol {}, this attngate speaks {}: {} {}", version, kRemoteProtocol,
                       version > kRemoteProtocol ? "upgrade attngate, or use an older adapter"
                                                 : "upgrade the adapter (attngate-jax: the release of `attngate --version`)",
                       where);
}

std::string adapter_self_description(const json::object &hello) {
    std::string out;
    for (const char *key : {"adapter", "adapter_version"}) {
        const auto *v = hello.if_contains(key);
        if (!v || !v->is_string() || v->get_string().empty() || v->get_string().size() > 64) continue;
        const std::string_view s = v->get_string();
        if (std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; })) out += std::string(s) + " ";
    }
    if (!out.empty()) out.back() = ',', out += ' ';
    return out;
}

Decoded<Hello> decode_hello(const json::object &body) {
    if (auto mismatch = protocol_mismatch(body); !mismatch.empty()) return std::unexpected(std::move(mismatch));
    Hello h;
    h.adapter = string_at(body, "adapter");
    if (h.adapter.empty()) h.adapter = "adapter";
    if (auto why = kernel_name_problem(h.adapter); !why.empty()) return std::unexpected("$.adapter: its name breaks the " + why);
    h.fingerprint = json::object{{"adapter_version", string_at(body, "adapter_version")}};
    if (const auto *fp = body.if_contains("fingerprint"); fp && fp->is_object())
        for (const auto &[k, v] : fp->get_object()) h.fingerprint[k] = v;
    return h;
}

Decoded<std::vector<KernelInfo>> decode_kernels(const json::object &body, const std::string &origin) {
    const auto *ks = body.if_contains("kernels");
    if (!ks || !ks->is_array()) return std::unexpected("$.kernels: expected {\"kernels\": [...]}");
    std::vector<KernelInfo> kernels;
    std::unordered_set<std::string> names;  // a linear scan per kernel made a list of 100k take 40 s
    for (size_t i = 0; i < ks->get_array().size(); ++i) {
        auto k = decode_kernel(ks->get_array()[i], i, origin);
        if (!k) return std::unexpected(k.error());
        if (!names.insert(k->name).second) return std::unexpected(fmt::format("$.kernels[{}]: kernel \"{}\" is listed twice", i, k->name));
        kernels.push_back(std::move(*k));
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

Decoded<std::string> decode_supports(const json::object &body) {
    const auto *s = body.if_contains("supported");
    if (!s || !s->is_bool()) return std::unexpected("the adapter's /v1/supports answer has no \"supported\"");
    if (s->get_bool()) return std::string();
    std::string why = string_at(body, "reason");
    return "unsupported: " + (why.empty() ? std::string("the adapter declined the case") : why);
}

std::optional<Declined> decode_declined(const json::object &body) {
    const auto *ok = body.if_contains("ok");
    if (ok && ok->is_bool() && ok->get_bool()) return std::nullopt;
    Declined d;
    d.unsupported = string_at(body, "unsupported");
    if (d.unsupported.empty()) d.error = string_at(body, "error");
    if (d.unsupported.empty() && d.error.empty()) d.error = "the adapter answered ok: false without an error";
    const auto *lowers = body.if_contains("lowers");
    d.lowers = !d.unsupported.empty() && lowers && lowers->is_bool() && lowers->get_bool();
    return d;
}

Decoded<RunTimes> decode_run(const json::object &body) {
    RunTimes t;
    // CPU time, when the adapter measures it, does not grow with the machine's load.
    for (const char *key : {"compile_cpu_s", "compile_s", "run_s"}) {
        auto s = seconds_at(body, key);
        if (!s) return std::unexpected(s.error());
        if (std::string_view(key) == "run_s") t.run_s = *s;
        else if (!t.compile_s) t.compile_s = *s;
    }
    return t;
}

Decoded<MemoryObservation> decode_memory(const json::object &body, int64_t calls) {
    MemoryObservation m;
    for (const auto &[key, series] : {std::pair{"rss_bytes", &m.rss_bytes}, {"live_arrays", &m.live_arrays},
                                      {"live_array_bytes", &m.live_array_bytes}, {"device_bytes_in_use", &m.device_bytes_in_use}}) {
        auto s = series_at(body, key, calls);
        if (!s) return std::unexpected(s.error());
        *series = std::move(*s);
    }
    if (const auto *p = body.if_contains("device_peak_bytes"); p && !p->is_null()) {
        auto n = count_of(*p, "$.device_peak_bytes");
        if (!n) return std::unexpected(n.error());
        m.device_peak_bytes = *n;
    }
    return m;
}

Decoded<TimeAnswer> decode_time(const json::object &body) {
    TimeAnswer t;
    const auto *s = body.if_contains("samples_s");
    if (!s || !s->is_array() || s->get_array().empty()) return std::unexpected("$.samples_s: expected a non-empty array of times");
    for (size_t i = 0; i < s->get_array().size(); ++i) {
        const json::value &x = s->get_array()[i];
        const double v = x.is_number() ? x.to_number<double>() : std::nan("");
        if (!std::isfinite(v) || v <= 0 || v > kMaxRemoteSeconds)
            return std::unexpected(fmt::format("$.samples_s[{}]: expected a time in (0, {:g}] s, got {}", i, kMaxRemoteSeconds, shown(x)));
        t.samples_s.push_back(v);
    }
    auto c = seconds_at(body, "compile_s");
    if (!c) return std::unexpected(c.error());
    t.compile_s = *c;
    return t;
}

Decoded<std::vector<float>> decode_output(std::string_view bytes, const std::string &what, const std::vector<int64_t> &shape) {
    auto npy = parse_npy(bytes, what);
    if (!npy) return std::unexpected(npy.error().message);
    if (npy->descr != "<f4" || npy->shape != shape)
        return std::unexpected(fmt::format("output is {} of shape [{}], expected <f4 of shape [{}]", npy->descr, fmt::join(npy->shape, ", "),
                                           fmt::join(shape, ", ")));
    const auto values = npy->as<float>();
    return std::vector<float>(values.begin(), values.end());
}

Decoded<std::optional<std::vector<std::string>>> decode_contract(const json::object &body) {
    const auto *c = body.if_contains("contract");
    if (!c || c->is_null()) return std::optional<std::vector<std::string>>();
    const auto *v = c->is_object() ? c->get_object().if_contains("violations") : nullptr;
    if (!v || !v->is_array()) return std::unexpected("$.contract.violations: expected an array of strings");
    std::vector<std::string> out;
    for (const auto &x : v->get_array()) {
        if (!x.is_string()) return std::unexpected("$.contract.violations: expected an array of strings");
        out.emplace_back(x.get_string());
    }
    return std::optional(std::move(out));
}

Result<std::string> token_from_env(const std::string &name) {
    const char *t = std::getenv(name.c_str());
    if (!t) return std::string();
    if (!http_header_safe(t))
        return fail(ErrorKind::Usage, "${}: holds a line break (CR or LF); a bearer token is one line, refused rather than sent", name);
    return std::string(t);
}

CrashInfo protocol_crash(const std::string &message, double seconds) {
    CrashInfo c;
    c.kind = "lost";
    c.message = message;
    c.seconds = seconds;
    return c;
}

ProgramObservation program_from_answer(const std::string &protocol_error, const json::object &body, const std::string &adapter) {
    ProgramObservation p;
    if (!protocol_error.empty()) {
        p.unavailable = protocol_error.find(": HTTP 404") != std::string::npos
                            ? fmt::format("adapter {} has no POST /v1/program: it cannot lower kernels for the TPU", adapter)
                            : "POST /v1/program: " + protocol_error;
    } else if (const auto declined = decode_declined(body)) {
        p.unavailable = declined->error.empty() ? declined->unsupported : declined->error;
    } else if (auto decoded = decode_program(body)) {
        p = std::move(*decoded);
    } else {
        p.unavailable = "adapter answered outside the protocol: POST /v1/program: " + decoded.error();
    }
    return p;
}

Decoded<ProgramObservation> decode_program(const json::object &body) {
    ProgramObservation p;
    p.target = string_at(body, "target");
    auto secs = seconds_at(body, "seconds");
    if (!secs) return std::unexpected(secs.error());
    p.seconds = secs->value_or(0.0);
    const auto *parts = body.if_contains("parts");
    if (!parts || !parts->is_array() || parts->get_array().empty())
        return std::unexpected("$.parts: expected a non-empty array of program parts");
    for (size_t i = 0; i < parts->get_array().size(); ++i) {
        const auto &v = parts->get_array()[i];
        if (!v.is_object()) return std::unexpected(fmt::format("$.parts[{}]: expected an object", i));
        const auto &o = v.get_object();
        ProgramPart part{string_at(o, "kind"), string_at(o, "name"), string_at(o, "sha256"), 0, string_at(o, "text")};
        if (part.kind != "mosaic" && part.kind != "stablehlo")
            return std::unexpected(fmt::format("$.parts[{}].kind: expected \"mosaic\" or \"stablehlo\", got \"{}\"", i, part.kind));
        if (part.sha256 != sha256_hex(part.text))
            return std::unexpected(fmt::format("$.parts[{}].sha256: \"{}\" is not the sha256 of its text", i, part.sha256));
        part.lines = static_cast<int64_t>(std::count(part.text.begin(), part.text.end(), '\n')) + 1;
        p.parts.push_back(std::move(part));
    }
    return p;
}

Decoded<std::string> decode_profile(const json::object &body) {
    const std::string archive = string_at(body, "archive");
    if (archive.empty() || archive.find('/') != std::string::npos || archive == "." || archive == "..")
        return std::unexpected(fmt::format("the adapter named no archive{}", body.contains("error") ? ": " + string_at(body, "error") : ""));
    return archive;
}

}  // namespace attngate
