// The remote backend: kernels behind an adapter that serves docs/protocol.md over HTTP
// (libcurl). Either an adapter this backend starts as a child on a free loopback port
// (--adapter CMD; restarted if it dies or hangs, so the other cases still run) or one
// already running (--remote URL, e.g. on a TPU VM). Each case's inputs are uploaded
// once as .npy and named by every call of that case. Every request of a case shares the
// case's one time limit. The messages themselves are remote_protocol.hpp.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/adapter_process.hpp"
#include "backend/backend.hpp"
#include "backend/remote_protocol.hpp"
#include "io/http_client.hpp"

namespace attngate {

struct RemoteOptions {
    std::string token_env = "ATTNGATE_ADAPTER_TOKEN";  ///< where the bearer token is read from
    double ready_timeout_s = 120.0;   ///< a started adapter must listen within this
    double request_timeout_s = 60.0;  ///< hello, kernels, tensors
    int64_t max_response_bytes = int64_t{1} << 30;
    bool verify_tls = true;
};

class RemoteBackend final : public Backend {
public:
    /// Starts `command` as a child adapter (a fresh random token guards it) and connects.
    static Result<std::unique_ptr<RemoteBackend>> start(const std::string &command, const RemoteOptions &options);
    /// Connects to an adapter already serving at `url` (token from options.token_env).
    static Result<std::unique_ptr<RemoteBackend>> connect(const std::string &url, const RemoteOptions &options);
    ~RemoteBackend() override;

    std::string name() const override;
    const std::vector<KernelInfo> &kernels() const override { return kernels_; }
    std::vector<std::string> load_errors() const override { return load_errors_; }
    std::string unsupported(const Invocation &inv, double timeout_s) override;
    Observation observe(const Invocation &inv, const ObserveRequest &req) override;
    std::vector<TimingOutcome> time(const std::vector<Invocation> &invs, const TimingRequest &req) override;
    boost::json::object fingerprint() const override;
    void release_case(const CaseSpec &c) override;
    /// The adapter's profiler trace (a .tar.gz from jax.profiler) saved under dir.
    Result<std::filesystem::path> profile(const Invocation &inv, const std::filesystem::path &dir) override;

    /// What the adapter said its name and versions are (from /v1/hello).
    const std::string &adapter_name() const { return adapter_; }
    const std::string &origin() const { return origin_; }

private:
    RemoteBackend(std::string origin, RemoteOptions options);
    Result<void> handshake();
    /// Restarts a started adapter after it died or hung; re-uploads nothing (lazily done).
    Result<void> restart();
    struct Deadline;
    struct Call;
    std::optional<CrashInfo> upload_inputs(const Invocation &inv, Call &call);
    void observe_memory(const Invocation &inv, const ObserveRequest &req, Call &call, Observation &o,
                        std::chrono::steady_clock::time_point t0);
    ProgramObservation observe_program(const Invocation &inv, Call &call);
    /// A request that got no answer as the case's CrashInfo; a started adapter is restarted.
    CrashInfo lost(const HttpFailure &f, double seconds, const std::optional<Deadline> &deadline);

    std::string origin_;
    RemoteOptions options_;
    std::string command_;  ///< empty for --remote
    std::string token_;
    std::unique_ptr<AdapterProcess> process_;
    std::string url_;
    HttpClient http_;
    std::string adapter_;
    boost::json::object hello_fingerprint_;
    std::vector<KernelInfo> kernels_;
    std::vector<std::string> load_errors_;  ///< GET /v1/kernels "errors": sources that failed to load
    std::map<std::string, std::string> support_cache_;  ///< "kernel\ncase id\nlabel" -> reason
    std::map<std::string, Observation> support_failures_;  ///< the same key -> why /v1/supports gave no answer (cached as "")
    std::string uploaded_case_;   ///< the case whose inputs the adapter holds now
    boost::json::object uploaded_names_;  ///< its input roles -> the tensor names they were uploaded under
    int64_t upload_serial_ = 0;   ///< tensor names are c<serial>.<tensor>
    int64_t output_serial_ = 0;
};

}  // namespace attngate
