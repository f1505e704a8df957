// Remote backend: the adapter's process, the HTTP calls, restarts, and one time limit per
// case. What the messages hold and what an answer may say is remote_protocol.cpp.
#include "backend/remote_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "backend/remote_protocol.hpp"
#include "plan/inputs.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"

namespace attngate {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string random_token() {
    std::random_device rd;
    return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

/// An answer, or why there is none: a transport failure, or an answer outside the protocol.
struct Answer {
    std::optional<HttpFailure> transport;
    std::string protocol_error;
    json::object body;
    bool ok() const { return !transport && protocol_error.empty(); }
    std::string message() const { return transport ? transport->message : protocol_error; }
};

std::string support_key(const Invocation &inv) { return inv.kernel->kernel + "\n" + inv.spec->id + "\n" + inv.kernel->label(); }

}  // namespace

/// The one time limit of a case: every request made for it (uploads, the call, its output,
/// the memory calls, retries included) ends by then.
struct RemoteBackend::Deadline {
    std::chrono::steady_clock::time_point at;
    double limit_s;
    static Deadline in(double seconds) {
        return {std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(seconds)),
                seconds};
    }
};

struct RemoteBackend::Call {
    RemoteBackend &self;
    std::optional<Deadline> deadline;  ///< none: each request has the backend's request timeout

    HttpRequest request(const std::string &method, const std::string &path) const {
        HttpRequest req;
        req.method = method;
        req.url = self.url_ + path;
        req.timeout_s = deadline ? deadline->limit_s : self.options_.request_timeout_s;
        if (deadline) {
            req.deadline = deadline->at;
            req.deadline_what = fmt::format("the case's time limit of {:g} s", deadline->limit_s);
        }
        return req;
    }

    Answer json(const std::string &method, const std::string &path, const json::value *body) {
        HttpRequest req = request(method, path);
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
        auto decoded = decode_answer(r->status, r->body, method + " " + req.url);
        if (decoded) a.body = std::move(*decoded);
        else a.protocol_error = std::move(decoded.error());
        return a;
    }

    std::expected<std::string, Answer> bytes(const std::string &path) {
        const HttpRequest req = request("GET", path);
        auto r = self.http_.send(req);
        Answer a;
        if (!r) a.transport = r.error();
        else if (r->status != 200) a.protocol_error = fmt::format("GET {}: HTTP {}", req.url, r->status);
        else return std::move(r->body);
        return std::unexpected(a);
    }

    Answer put_tensor(const std::string &name, const NpyArray &array) {
        HttpRequest req = request("PUT", "/v1/tensors/" + name);
        req.body = serialize_npy(array);
        req.content_type = "application/octet-stream";
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
    Call{*this, Deadline::in(2.0)}.json("POST", "/v1/shutdown", nullptr);
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
    auto token = token_from_env(options.token_env);
    if (!token) return std::unexpected(token.error());
    b->token_ = std::move(*token);
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
    Call call{*this, std::nullopt};
    const Answer hello = call.json("GET", "/v1/hello", nullptr);
    if (!hello.ok()) return fail(ErrorKind::Infra, "adapter {}: {}", origin_, hello.message());
    if (auto mismatch = protocol_mismatch(hello.body); !mismatch.empty())
        return fail(ErrorKind::Infra, "adapter at {} ({}{}) {}", url_, adapter_self_description(hello.body),
                    command_.empty() ? "--remote" : "started: " + command_, mismatch);
    auto h = decode_hello(hello.body);
    if (!h) return fail(ErrorKind::Infra, "adapter {}: GET /v1/hello: {}", origin_, h.error());
    adapter_ = std::move(h->adapter);
    hello_fingerprint_ = std::move(h->fingerprint);
    const Answer list = call.json("GET", "/v1/kernels", nullptr);
    if (!list.ok()) return fail(ErrorKind::Infra, "adapter {}: {}", origin_, list.message());
    auto kernels = decode_kernels(list.body, origin_);
    if (!kernels) return fail(ErrorKind::Infra, "adapter {}: GET /v1/kernels: {}", origin_, kernels.error());
    if (kernels_.empty()) kernels_ = std::move(*kernels);  // after a restart the list is the one planned with
    load_errors_ = decode_load_errors(list.body);
    return {};
}

boost::json::object RemoteBackend::fingerprint() const {
    json::object fp = hello_fingerprint_;
    fp["url"] = command_.empty() ? url_ : "started: " + command_;
    return json::object{{"adapters", json::object{{adapter_, fp}}}};
}

std::string RemoteBackend::unsupported(const Invocation &inv, double timeout_s) {
    const std::string key = support_key(inv);
    if (const auto it = support_cache_.find(key); it != support_cache_.end()) return it->second;
    const json::value body = json::object{{"kernel", inv.kernel->kernel}, {"case", protocol_case(*inv.spec, *inv.kernel)}};
    Call call{*this, Deadline::in(timeout_s)};  // a supports() that blocks is a hang, not a minute's wait then a skip
    const auto t0 = std::chrono::steady_clock::now();
    const Answer a = call.json("POST", "/v1/supports", &body);
    // No answer is this case's error, for observe() to report; lost() replaces a dead or hung adapter now.
    Observation failed;
    failed.seconds = since(t0);
    if (a.transport) failed.crash = lost(*a.transport, failed.seconds, call.deadline);
    else if (!a.protocol_error.empty()) failed.host_error = "the adapter cannot say whether the kernel supports the case: " + a.protocol_error;
    else if (auto s = decode_supports(a.body)) return support_cache_[key] = std::move(*s);
    else failed.host_error = "adapter answered outside the protocol: " + s.error();
    support_failures_[key] = std::move(failed);
    return support_cache_[key] = std::string();  // runnable, as far as planning is concerned
}

CrashInfo RemoteBackend::lost(const HttpFailure &f, double seconds, const std::optional<Deadline> &deadline) {
    CrashInfo c;
    c.seconds = seconds;
    c.kind = f.kind == HttpFailure::Kind::Timeout ? "timeout" : "lost";
    if (f.kind == HttpFailure::Kind::Timeout && deadline) c.seconds = deadline->limit_s;  // the limit it ran into, once
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

std::optional<CrashInfo> RemoteBackend::upload_inputs(const Invocation &inv, Call &call) {
    if (uploaded_case_ == inv.spec->id) return std::nullopt;
    const auto t0 = std::chrono::steady_clock::now();
    call.json("DELETE", "/v1/tensors", nullptr);
    const std::string prefix = fmt::format("c{}.", ++upload_serial_);
    uploaded_names_ = json::object{};
    for (const auto &[name, array] : input_tensors(*inv.spec, *inv.inputs)) {  // a paged case: its pools and tables
        uploaded_names_[name] = prefix + name;
        const Answer a = call.put_tensor(prefix + name, array);
        if (a.transport) return lost(*a.transport, since(t0), call.deadline);
        if (!a.protocol_error.empty()) return protocol_crash(a.protocol_error, since(t0));
    }
    uploaded_case_ = inv.spec->id;
    return std::nullopt;
}

/// The memory calls of an observation into o (their series, or why there are none).
void RemoteBackend::observe_memory(const Invocation &inv, const ObserveRequest &req, Call &call, Observation &o,
                                   std::chrono::steady_clock::time_point t0) {
    const json::value body = call_request(inv, uploaded_names_, {{"warmup_calls", req.warmup_calls}, {"calls", req.memory_calls}});
    const Answer mem = call.json("POST", "/v1/memory", &body);
    if (mem.transport) {
        o.crash = lost(*mem.transport, since(t0), call.deadline);
        return;
    }
    if (!mem.protocol_error.empty()) {
        o.host_error = "adapter answered outside the protocol: " + mem.protocol_error;
        return;
    }
    if (const auto declined = decode_declined(mem.body)) {
        o.kernel_rc = 1;
        o.kernel_error = "memory calls: " + (declined->error.empty() ? declined->unsupported : declined->error);
        return;
    }
    auto m = decode_memory(mem.body, req.memory_calls);
    if (!m) {
        o.host_error = "adapter answered outside the protocol: POST /v1/memory: " + m.error();
        return;
    }
    m->calls = req.warmup_calls + req.memory_calls;
    o.memory = std::move(*m);
}

Observation RemoteBackend::observe(const Invocation &inv, const ObserveRequest &req) {
    if (const auto it = support_failures_.find(support_key(inv)); it != support_failures_.end()) return it->second;
    Observation o;
    const auto t0 = std::chrono::steady_clock::now();
    Call call{*this, Deadline::in(req.timeout_s)};
    const auto outside = [&](const std::string &what) {
        o.host_error = "adapter answered outside the protocol: " + what;
        return o;
    };
    if (auto crash = upload_inputs(inv, call)) {
        o.crash = std::move(crash);
        return o;
    }
    // A fresh name per call: an output left from another kernel can never be read as this one's.
    const std::string out_name = fmt::format("c{}.out{}", upload_serial_, ++output_serial_);
    json::object extra{{"output", out_name}};
    if (req.conformance) extra["conformance"] = true;  // checks declarations: see ObserveRequest
    const json::value body = call_request(inv, uploaded_names_, std::move(extra));
    const Answer run = call.json("POST", "/v1/run", &body);
    o.seconds = since(t0);
    if (run.transport) {
        o.crash = lost(*run.transport, o.seconds, call.deadline);
        return o;
    }
    if (!run.protocol_error.empty()) return outside(run.protocol_error);
    if (auto contract = decode_contract(run.body); !contract) return outside("POST /v1/run: " + contract.error());
    else if (*contract) o.contract_watched = true, o.contract_violations = std::move(**contract);
    if (const auto declined = decode_declined(run.body)) {
        if (!declined->unsupported.empty()) o.unsupported = declined->unsupported;
        else o.kernel_rc = 1, o.kernel_error = declined->error;
        // A kernel that failed, or cannot run here but lowers (a Mosaic kernel off a TPU), still has a program.
        if (req.program && (declined->unsupported.empty() || declined->lowers)) o.program = observe_program(inv, call);
        return o;
    }
    auto times = decode_run(run.body);
    if (!times) return outside("POST /v1/run: " + times.error());
    o.compile_s = times->compile_s;
    if (times->run_s) o.seconds = *times->run_s;

    auto bytes = call.bytes("/v1/tensors/" + out_name);
    if (!bytes) {
        if (!bytes.error().transport) return outside(bytes.error().protocol_error);
        o.crash = lost(*bytes.error().transport, since(t0), call.deadline);
        return o;
    }
    auto output = decode_output(*bytes, "GET /v1/tensors/" + out_name, protocol_output_shape(*inv.spec));
    if (!output) return outside(output.error());
    o.output = std::move(*output);
    if (req.program) o.program = observe_program(inv, call);
    if (req.memory) observe_memory(inv, req, call, o, t0);
    return o;
}

/// The kernel lowered for the TPU (POST /v1/program), or why there is none (program_from_answer).
ProgramObservation RemoteBackend::observe_program(const Invocation &inv, Call &call) {
    const json::value body = call_request(inv, uploaded_names_, {});
    const Answer a = call.json("POST", "/v1/program", &body);
    if (a.transport) return ProgramObservation{"", "POST /v1/program: " + lost(*a.transport, 0.0, call.deadline).describe(), {}, 0.0};
    return program_from_answer(a.protocol_error, a.body, adapter_);
}

std::vector<TimingOutcome> RemoteBackend::time(const std::vector<Invocation> &invs, const TimingRequest &req) {
    std::vector<TimingOutcome> out(invs.size());
    const size_t total = invs.size() * static_cast<size_t>(std::max(req.repetitions, 0));
    size_t timed = 0;  // repetitions of the invocations timed so far, for req.on_progress
    for (size_t i = 0; i < invs.size(); ++i) {
        const Invocation &inv = invs[i];
        Call call{*this, Deadline::in(std::min(req.timeout_s, 600.0))};
        if (auto crash = upload_inputs(inv, call)) {
            out[i].error = crash->describe();
            continue;
        }
        const json::value body =
            call_request(inv, uploaded_names_, {{"warmup", 1}, {"repetitions", req.repetitions}, {"min_time_s", req.min_time_s}});
        const auto t0 = std::chrono::steady_clock::now();
        const Answer a = call.json("POST", "/v1/time", &body);
        if (a.transport) {
            out[i].error = lost(*a.transport, since(t0), call.deadline).describe();
            continue;
        }
        if (!a.protocol_error.empty()) {
            out[i].error = "adapter answered outside the protocol: " + a.protocol_error;
            continue;
        }
        if (const auto declined = decode_declined(a.body)) {
            out[i].error = declined->error.empty() ? "unsupported: " + declined->unsupported : declined->error;
            continue;
        }
        auto t = decode_time(a.body);
        if (!t) {
            out[i].error = "adapter answered outside the protocol: POST /v1/time: " + t.error();
            continue;
        }
        out[i].samples_s = std::move(t->samples_s);
        out[i].compile_s = t->compile_s;
        timed += static_cast<size_t>(std::max(req.repetitions, 0));
        if (req.on_progress) req.on_progress(timed, total);
    }
    return out;
}

Result<std::filesystem::path> RemoteBackend::profile(const Invocation &inv, const std::filesystem::path &dir) {
    Call call{*this, Deadline::in(600.0)};
    if (auto crash = upload_inputs(inv, call)) return fail(ErrorKind::Infra, "profile: {}", crash->describe());
    const json::value body = call_request(inv, uploaded_names_, {{"calls", 3}});
    const Answer a = call.json("POST", "/v1/profile", &body);
    if (!a.ok()) return fail(ErrorKind::Infra, "profile: {}", a.message());
    auto archive = decode_profile(a.body);
    if (!archive) return fail(ErrorKind::Infra, "profile: {}", archive.error());
    auto bytes = call.bytes("/v1/files/" + *archive);
    if (!bytes) return fail(ErrorKind::Infra, "profile: {}", bytes.error().message());
    const auto path = dir / fmt::format("{}__{}__{}.tar.gz", inv.spec->id, inv.kernel->label(), adapter_);
    if (auto w = write_file_atomic(path, *bytes); !w) return std::unexpected(w.error());
    return path;
}

void RemoteBackend::release_case(const CaseSpec &c) {
    if (uploaded_case_ != c.id) return;
    Call{*this, std::nullopt}.json("DELETE", "/v1/tensors", nullptr);
    uploaded_case_.clear();
}

}  // namespace attngate
