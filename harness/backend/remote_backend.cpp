// Remote backend: the protocol of docs/protocol.md over libcurl.
#include "backend/remote_backend.hpp"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"

namespace attngate {

namespace {

constexpr int kProtocol = 1;

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string random_token() {
    std::random_device rd;
    return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

uint32_t workspace_from_name(std::string_view s) {
    if (s == "constant") return ATTNGATE_WORKSPACE_CONSTANT;
    if (s == "linear") return ATTNGATE_WORKSPACE_LINEAR;
    if (s == "quadratic") return ATTNGATE_WORKSPACE_QUADRATIC;
    return ATTNGATE_WORKSPACE_UNSPECIFIED;
}

/// A JSON answer, or why there is none: a transport failure, or an answer that is not
/// the protocol (an HTTP error status, a body that is not a JSON object).
struct Answer {
    std::optional<HttpFailure> transport;
    std::string protocol_error;
    json::object body;
    bool ok() const { return !transport && protocol_error.empty(); }
    std::string message() const { return transport ? transport->message : protocol_error; }
};

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
    return o;
}

struct RemoteBackend::Call {
    RemoteBackend &self;

    Answer json(const std::string &method, const std::string &path, const json::value *body, double timeout_s) {
        HttpRequest req;
        req.method = method;
        req.url = self.url_ + path;
        req.timeout_s = timeout_s;
        if (body) {
            req.body = json::serialize(*body);
            req.content_type = "application/json";
        }
        Answer a;
        auto r = self.http_.send(req);
        if (!r) {
            a.transport = r.error();
            return a;
        }
        boost::system::error_code ec;
        const json::value v = r->body.empty() ? json::value(json::object{}) : json::parse(r->body, ec);
        std::string detail;
        if (!ec && v.is_object()) detail = string_at(v.get_object(), "error");
        if (r->status < 200 || r->status >= 300) {
            a.protocol_error = fmt::format("{} {}: HTTP {}{}", method, req.url, r->status, detail.empty() ? "" : ": " + detail);
            return a;
        }
        if (ec || !v.is_object()) {
            a.protocol_error = fmt::format("{} {}: the answer is not a JSON object (not the attngate protocol)", method, req.url);
            return a;
        }
        a.body = v.get_object();
        return a;
    }

    std::expected<std::string, Answer> bytes(const std::string &path, double timeout_s) {
        HttpRequest req;
        req.url = self.url_ + path;
        req.timeout_s = timeout_s;
        auto r = self.http_.send(req);
        Answer a;
        if (!r) a.transport = r.error();
        else if (r->status != 200) a.protocol_error = fmt::format("GET {}: HTTP {}", req.url, r->status);
        else return std::move(r->body);
        return std::unexpected(a);
    }

    Answer put_tensor(const std::string &name, const NpyArray &a, double timeout_s) {
        HttpRequest req;
        req.method = "PUT";
        req.url = self.url_ + "/v1/tensors/" + name;
        req.body = serialize_npy(a);
        req.content_type = "application/octet-stream";
        req.timeout_s = timeout_s;
        Answer out;
        auto r = self.http_.send(req);
        if (!r) out.transport = r.error();
        else if (r->status != 200 && r->status != 201) out.protocol_error = fmt::format("PUT {}: HTTP {}", req.url, r->status);
        return out;
    }
};

RemoteBackend::RemoteBackend(std::string origin, RemoteOptions options)
    : origin_(std::move(origin)), options_(std::move(options)) {}

RemoteBackend::~RemoteBackend() {
    if (!process_) return;
    // A polite shutdown first; the process group is killed after a grace period anyway.
    Call{*this}.json("POST", "/v1/shutdown", nullptr, 2.0);
    process_->stop(3.0);
}

std::string RemoteBackend::name() const { return fmt::format("adapter {} at {}", adapter_.empty() ? origin_ : adapter_, url_); }

Result<std::unique_ptr<RemoteBackend>> RemoteBackend::start(const std::string &command, const RemoteOptions &options) {
    std::unique_ptr<RemoteBackend> b(new RemoteBackend(command, options));
    b->command_ = command;
    b->token_ = random_token();
    if (auto r = b->restart(); !r) return std::unexpected(r.error());
    return b;
}

Result<std::unique_ptr<RemoteBackend>> RemoteBackend::connect(const std::string &url, const RemoteOptions &options) {
    std::unique_ptr<RemoteBackend> b(new RemoteBackend(url, options));
    b->url_ = url;
    while (!b->url_.empty() && b->url_.back() == '/') b->url_.pop_back();
    if (const char *t = std::getenv(options.token_env.c_str())) b->token_ = t;
    HttpOptions http;
    http.timeout_s = options.request_timeout_s;
    http.max_response_bytes = options.max_response_bytes;
    http.verify_tls = options.verify_tls;
    http.bearer_token = b->token_;
    b->http_ = HttpClient(http);
    if (auto r = b->handshake(); !r) return std::unexpected(r.error());
    return b;
}

Result<void> RemoteBackend::restart() {
    if (process_) process_->stop(0);
    process_.reset();
    auto p = AdapterProcess::start(command_, options_.token_env, token_, options_.ready_timeout_s);
    if (!p) return std::unexpected(p.error());
    process_ = std::move(*p);
    url_ = process_->url();
    HttpOptions http;
    http.timeout_s = options_.request_timeout_s;
    http.max_response_bytes = options_.max_response_bytes;
    http.bearer_token = token_;
    http_ = HttpClient(http);
    uploaded_case_.clear();
    return handshake();
}

Result<void> RemoteBackend::handshake() {
    Call call{*this};
    const Answer hello = call.json("GET", "/v1/hello", nullptr, options_.request_timeout_s);
    if (!hello.ok()) return fail(ErrorKind::Infra, "adapter {}: {}", origin_, hello.message());
    const auto protocol = number_at(hello.body, "protocol");
    if (!protocol || *protocol != kProtocol)
        return fail(ErrorKind::Infra, "adapter {}: speaks protocol {}, this attngate speaks {} (docs/protocol.md)", origin_,
                    protocol ? fmt::format("{:g}", *protocol) : "(none)", kProtocol);
    adapter_ = string_at(hello.body, "adapter");
    if (adapter_.empty()) adapter_ = "adapter";
    hello_fingerprint_ = json::object{{"adapter_version", string_at(hello.body, "adapter_version")}};
    if (const auto *fp = hello.body.if_contains("fingerprint"); fp && fp->is_object())
        for (const auto &[k, v] : fp->get_object()) hello_fingerprint_[k] = v;

    const Answer list = call.json("GET", "/v1/kernels", nullptr, options_.request_timeout_s);
    if (!list.ok()) return fail(ErrorKind::Infra, "adapter {}: {}", origin_, list.message());
    const auto *ks = list.body.if_contains("kernels");
    if (!ks || !ks->is_array()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: expected {{\"kernels\": [...]}}", origin_);
    std::vector<KernelInfo> kernels;
    for (const auto &kv : ks->get_array()) {
        if (!kv.is_object()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: a kernel that is not an object", origin_);
        const auto &o = kv.get_object();
        KernelInfo k;
        k.name = string_at(o, "name");
        k.version = string_at(o, "version");
        k.description = string_at(o, "description");
        k.origin = origin_;
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
                                 "\"probabilities\", got {}", origin_, k.name, json::serialize(x));
            }
        if (k.name.empty()) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: a kernel without a name", origin_);
        kernels.push_back(std::move(k));
    }
    if (kernels_.empty()) kernels_ = std::move(kernels);  // after a restart the list is the one planned with
    load_errors_.clear();
    if (const auto *errs = list.body.if_contains("errors"); errs && errs->is_array())
        for (const auto &e : errs->get_array())
            if (e.is_object()) load_errors_.push_back(string_at(e.get_object(), "source") + ": " + string_at(e.get_object(), "error"));
    return {};
}

boost::json::object RemoteBackend::fingerprint() const {
    json::object fp = hello_fingerprint_;
    fp["url"] = command_.empty() ? url_ : "started: " + command_;
    return json::object{{"adapters", json::object{{adapter_, fp}}}};
}

std::string RemoteBackend::unsupported(const Invocation &inv) {
    const std::string key = inv.kernel->kernel + "\n" + inv.spec->id + "\n" + inv.kernel->label();
    if (const auto it = support_cache_.find(key); it != support_cache_.end()) return it->second;
    const json::value body = json::object{{"kernel", inv.kernel->kernel}, {"case", protocol_case(*inv.spec, *inv.kernel)}};
    const Answer a = Call{*this}.json("POST", "/v1/supports", &body, options_.request_timeout_s);
    std::string why;
    if (!a.ok()) why = "cannot ask the adapter: " + a.message();
    else if (const auto *s = a.body.if_contains("supported"); !s || !s->is_bool())
        why = "the adapter's /v1/supports answer has no \"supported\"";
    else if (!s->get_bool()) {
        why = string_at(a.body, "reason");
        if (why.empty()) why = "the adapter declined the case";
        why = "unsupported: " + why;
    }
    support_cache_[key] = why;
    return why;
}

CrashInfo RemoteBackend::lost(const HttpFailure &f, double seconds) {
    CrashInfo c;
    c.seconds = seconds;
    if (f.kind == HttpFailure::Kind::Timeout) c.kind = "timeout";
    else c.kind = "lost";
    c.message = f.message;
    if (process_) {
        // A connection that broke mid-answer usually means the adapter is exiting: give it
        // a moment so the report says how it ended rather than "connection lost".
        for (int i = 0; i < 100 && f.kind != HttpFailure::Kind::Timeout && process_->alive(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (!process_->alive()) {
            c.signal = process_->signal_name();
            c.kind = c.signal.empty() ? "exit" : "crash";
            c.exit_code = process_->exit_code();
            c.message.clear();
        }
        c.stderr_tail = process_->log_tail(1500);
        // A started adapter that hung or died is replaced so the other cases still run.
        if (auto r = restart(); !r) c.message += "; restarting it failed: " + r.error().message;
    }
    return c;
}

std::optional<CrashInfo> RemoteBackend::upload_inputs(const Invocation &inv, double timeout_s) {
    if (uploaded_case_ == inv.spec->id) return std::nullopt;
    const auto t0 = std::chrono::steady_clock::now();
    Call call{*this};
    call.json("DELETE", "/v1/tensors", nullptr, timeout_s);
    const CaseSpec &c = *inv.spec;
    const CaseInputs &in = *inv.inputs;
    const std::string prefix = fmt::format("c{}.", ++upload_serial_);
    std::vector<std::pair<std::string, NpyArray>> tensors = {
        {"q", make_npy(std::span<const float>(in.q), {c.batch, c.seq_q, c.heads_q, c.head_dim})},
        {"k", make_npy(std::span<const float>(in.k), {c.batch, c.seq_k, c.heads_kv, c.head_dim})},
        {"v", make_npy(std::span<const float>(in.v), {c.batch, c.seq_k, c.heads_kv, c.head_dim_v})}};
    if (!in.bias.empty()) tensors.emplace_back("bias", make_npy(std::span<const float>(in.bias), c.bias_shape));
    if (!in.segment_ids_q.empty()) {
        tensors.emplace_back("segment_ids_q", make_npy(std::span<const int32_t>(in.segment_ids_q), {c.batch, c.seq_q}));
        tensors.emplace_back("segment_ids_kv", make_npy(std::span<const int32_t>(in.segment_ids_kv), {c.batch, c.seq_k}));
    }
    for (const auto &[name, array] : tensors) {
        const Answer a = call.put_tensor(prefix + name, array, timeout_s);
        if (a.transport) return lost(*a.transport, since(t0));
        if (!a.protocol_error.empty()) {
            CrashInfo cr;
            cr.kind = "lost";
            cr.message = a.protocol_error;
            cr.seconds = since(t0);
            return cr;
        }
    }
    uploaded_case_ = c.id;
    return std::nullopt;
}

namespace {

json::object input_names(const CaseInputs &in, int64_t serial) {
    const std::string p = fmt::format("c{}.", serial);
    json::object o{{"q", p + "q"}, {"k", p + "k"}, {"v", p + "v"}};
    if (!in.bias.empty()) o["bias"] = p + "bias";
    if (!in.segment_ids_q.empty()) {
        o["segment_ids_q"] = p + "segment_ids_q";
        o["segment_ids_kv"] = p + "segment_ids_kv";
    }
    return o;
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

}  // namespace

Observation RemoteBackend::observe(const Invocation &inv, const ObserveRequest &req) {
    Observation o;
    const auto t0 = std::chrono::steady_clock::now();
    const auto protocol_failure = [&](const std::string &what) {
        o.host_error = "adapter answered outside the protocol: " + what;
        return o;
    };
    if (auto crash = upload_inputs(inv, req.timeout_s)) {
        o.crash = std::move(crash);
        return o;
    }
    // A fresh name per call: an output left from another kernel can never be read as this one's.
    const std::string out_name = fmt::format("c{}.out{}", upload_serial_, ++output_serial_);
    json::value body = json::object{{"kernel", inv.kernel->kernel},
                                          {"case", protocol_case(*inv.spec, *inv.kernel)},
                                          {"inputs", input_names(*inv.inputs, upload_serial_)},
                                          {"output", out_name}};
    if (req.conformance) body.as_object()["conformance"] = true;  // checks declarations: see ObserveRequest
    Call call{*this};
    const Answer run = call.json("POST", "/v1/run", &body, req.timeout_s);
    o.seconds = since(t0);
    if (run.transport) {
        o.crash = lost(*run.transport, o.seconds);
        return o;
    }
    if (!run.protocol_error.empty()) return protocol_failure(run.protocol_error);
    if (kernel_declined(run.body, o)) return o;
    // CPU time, when the adapter measures it, does not grow with the machine's load.
    o.compile_s = number_at(run.body, "compile_cpu_s");
    if (!o.compile_s) o.compile_s = number_at(run.body, "compile_s");
    if (const auto r = number_at(run.body, "run_s")) o.seconds = *r;

    auto bytes = call.bytes("/v1/tensors/" + out_name, req.timeout_s);
    if (!bytes) {
        if (bytes.error().transport) {
            o.crash = lost(*bytes.error().transport, since(t0));
            return o;
        }
        return protocol_failure(bytes.error().protocol_error);
    }
    auto npy = parse_npy(*bytes, "GET /v1/tensors/" + out_name);
    if (!npy) return protocol_failure(npy.error().message);
    const std::vector<int64_t> want = output_shape(*inv.spec);
    if (npy->descr != "<f4" || npy->shape != want)
        return protocol_failure(fmt::format("output is {} of shape [{}], expected <f4 of shape [{}]", npy->descr,
                                            fmt::join(npy->shape, ", "), fmt::join(want, ", ")));
    const auto values = npy->as<float>();
    o.output.assign(values.begin(), values.end());

    if (req.memory) {
        const json::value mem_body = json::object{{"kernel", inv.kernel->kernel},
                                                  {"case", protocol_case(*inv.spec, *inv.kernel)},
                                                  {"inputs", input_names(*inv.inputs, upload_serial_)},
                                                  {"warmup_calls", req.warmup_calls},
                                                  {"calls", req.memory_calls}};
        const Answer mem = call.json("POST", "/v1/memory", &mem_body, req.timeout_s);
        if (mem.transport) {
            o.crash = lost(*mem.transport, since(t0));
            return o;
        }
        if (!mem.protocol_error.empty()) return protocol_failure(mem.protocol_error);
        Observation declined;
        if (kernel_declined(mem.body, declined)) {
            o.kernel_rc = declined.kernel_rc ? declined.kernel_rc : 1;
            o.kernel_error = "memory calls: " + (declined.kernel_error.empty() ? declined.unsupported : declined.kernel_error);
            return o;
        }
        MemoryObservation m;
        m.calls = req.warmup_calls + req.memory_calls;
        m.rss_bytes = int_series(mem.body, "rss_bytes");
        m.live_arrays = int_series(mem.body, "live_arrays");
        m.live_array_bytes = int_series(mem.body, "live_array_bytes");
        m.device_bytes_in_use = int_series(mem.body, "device_bytes_in_use");
        if (const auto p = number_at(mem.body, "device_peak_bytes")) m.device_peak_bytes = static_cast<int64_t>(*p);
        o.memory = std::move(m);
    }
    return o;
}

std::vector<TimingOutcome> RemoteBackend::time(const std::vector<Invocation> &invs, const TimingRequest &req) {
    std::vector<TimingOutcome> out(invs.size());
    for (size_t i = 0; i < invs.size(); ++i) {
        const Invocation &inv = invs[i];
        const double timeout = std::min(req.timeout_s, 600.0);
        if (auto crash = upload_inputs(inv, timeout)) {
            out[i].error = crash->describe();
            continue;
        }
        const json::value body = json::object{{"kernel", inv.kernel->kernel},
                                              {"case", protocol_case(*inv.spec, *inv.kernel)},
                                              {"inputs", input_names(*inv.inputs, upload_serial_)},
                                              {"warmup", 1},
                                              {"repetitions", req.repetitions},
                                              {"min_time_s", req.min_time_s}};
        const auto t0 = std::chrono::steady_clock::now();
        const Answer a = Call{*this}.json("POST", "/v1/time", &body, timeout);
        if (a.transport) {
            out[i].error = lost(*a.transport, since(t0)).describe();
            continue;
        }
        if (!a.protocol_error.empty()) {
            out[i].error = "adapter answered outside the protocol: " + a.protocol_error;
            continue;
        }
        Observation declined;
        if (kernel_declined(a.body, declined)) {
            out[i].error = declined.kernel_error.empty() ? "unsupported: " + declined.unsupported : declined.kernel_error;
            continue;
        }
        if (const auto *s = a.body.if_contains("samples_s"); s && s->is_array())
            for (const auto &x : s->get_array())
                if (x.is_number() && std::isfinite(x.to_number<double>()) && x.to_number<double>() > 0)
                    out[i].samples_s.push_back(x.to_number<double>());
        if (out[i].samples_s.empty()) out[i].error = "adapter answered /v1/time without usable samples_s";
        out[i].compile_s = number_at(a.body, "compile_s");
    }
    return out;
}

Result<std::filesystem::path> RemoteBackend::profile(const Invocation &inv, const std::filesystem::path &dir) {
    const double timeout = 600.0;
    if (auto crash = upload_inputs(inv, timeout)) return fail(ErrorKind::Infra, "profile: {}", crash->describe());
    const json::value body = json::object{{"kernel", inv.kernel->kernel},
                                          {"case", protocol_case(*inv.spec, *inv.kernel)},
                                          {"inputs", input_names(*inv.inputs, upload_serial_)},
                                          {"calls", 3}};
    Call call{*this};
    const Answer a = call.json("POST", "/v1/profile", &body, timeout);
    if (!a.ok()) return fail(ErrorKind::Infra, "profile: {}", a.message());
    const std::string archive = string_at(a.body, "archive");
    if (archive.empty() || archive.find('/') != std::string::npos)
        return fail(ErrorKind::Infra, "profile: the adapter named no archive{}", a.body.contains("error") ? ": " + string_at(a.body, "error") : "");
    auto bytes = call.bytes("/v1/files/" + archive, timeout);
    if (!bytes) return fail(ErrorKind::Infra, "profile: {}", bytes.error().message());
    const auto path = dir / fmt::format("{}__{}__{}.tar.gz", inv.spec->id, inv.kernel->label(), adapter_);
    if (auto w = write_file_atomic(path, *bytes); !w) return std::unexpected(w.error());
    return path;
}

void RemoteBackend::release_case(const CaseSpec &c) {
    if (uploaded_case_ != c.id) return;
    Call{*this}.json("DELETE", "/v1/tensors", nullptr, options_.request_timeout_s);
    uploaded_case_.clear();
}

}  // namespace attngate
