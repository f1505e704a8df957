// Remote backend: the protocol of docs/protocol.md over libcurl.
#include "backend/remote_backend.hpp"

#include "backend/remote_protocol.hpp"

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

/// A JSON answer, or why there is none: a transport failure, or an answer that is not
/// the protocol (an HTTP error status, a body that is not a JSON object).
struct Answer {
    std::optional<HttpFailure> transport;
    std::string protocol_error;
    json::object body;
    bool ok() const { return !transport && protocol_error.empty(); }
    std::string message() const { return transport ? transport->message : protocol_error; }
};

}  // namespace

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
    auto kernels = decode_kernels(list.body, origin_);
    if (!kernels) return std::unexpected(kernels.error());
    if (kernels_.empty()) kernels_ = std::move(*kernels);  // after a restart the list is the one planned with
    load_errors_ = decode_load_errors(list.body);
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
    const std::vector<std::pair<std::string, NpyArray>> tensors = input_tensors(c, in);  // a paged case: its pools and tables
    uploaded_names_ = json::object{};
    for (const auto &[name, array] : tensors) {
        uploaded_names_[name] = prefix + name;
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
                                          {"inputs", uploaded_names_},
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
    const std::vector<int64_t> want = protocol_output_shape(*inv.spec);
    if (npy->descr != "<f4" || npy->shape != want)
        return protocol_failure(fmt::format("output is {} of shape [{}], expected <f4 of shape [{}]", npy->descr,
                                            fmt::join(npy->shape, ", "), fmt::join(want, ", ")));
    const auto values = npy->as<float>();
    o.output.assign(values.begin(), values.end());

    if (req.memory) {
        const json::value mem_body = json::object{{"kernel", inv.kernel->kernel},
                                                  {"case", protocol_case(*inv.spec, *inv.kernel)},
                                                  {"inputs", uploaded_names_},
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
        o.memory = decode_memory(mem.body, req.warmup_calls + req.memory_calls);
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
                                              {"inputs", uploaded_names_},
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
                                          {"inputs", uploaded_names_},
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
