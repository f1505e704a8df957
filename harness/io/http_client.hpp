// One HTTP client (libcurl) for everything attngate reaches over the network: remote
// kernel adapters and the HTTP baseline store. Keep-alive, connect and total timeouts,
// a response-size limit, retries with exponential backoff and jitter for idempotent
// requests only, TLS verification on unless turned off, and a bearer token that is sent
// but never appears in a message.
#pragma once

#include <chrono>
#include <expected>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attngate {

struct HttpOptions {
    double connect_timeout_s = 5.0;
    double timeout_s = 60.0;                   ///< whole request, unless a call says otherwise
    int64_t max_response_bytes = int64_t{1} << 30;
    int retries = 2;                           ///< extra attempts for idempotent requests
    double backoff_s = 0.2;                    ///< first retry delay; doubles, with jitter
    bool verify_tls = true;
    std::string bearer_token;                  ///< sent as Authorization; never printed
};

struct HttpRequest {
    std::string method = "GET";
    std::string url;
    std::string body;
    std::string content_type;                  ///< empty: none
    std::vector<std::pair<std::string, std::string>> headers;  ///< e.g. If-Match
    double timeout_s = 0.0;                    ///< > 0: overrides HttpOptions::timeout_s
    /// Set: every attempt and retry together end by then (a case's one time limit), and the
    /// timeout message names `deadline_what` instead of the per-attempt timeout.
    std::optional<std::chrono::steady_clock::time_point> deadline{};
    std::string deadline_what{};               ///< "the case's time limit of 4 s"
};

struct HttpResponse {
    long status = 0;
    std::string body;
    std::string content_type;
    std::string etag;
};

/// Why a request got no HTTP response at all.
struct HttpFailure {
    enum class Kind { Connect, Timeout, TooLarge, Other };
    Kind kind = Kind::Other;
    std::string message;  ///< "POST http://127.0.0.1:4711/v1/run: timed out after 30 s"
};

class HttpClient {
public:
    explicit HttpClient(HttpOptions options = {});
    ~HttpClient();
    HttpClient(const HttpClient &) = delete;
    HttpClient &operator=(const HttpClient &) = delete;
    HttpClient(HttpClient &&) noexcept;
    HttpClient &operator=(HttpClient &&) noexcept;

    /// Sends the request; GET, HEAD, PUT, DELETE, PROPFIND and MKCOL are retried on a connection failure,
    /// a timeout or a 5xx answer (a PUT with If-Match is retried too: it cannot apply twice),
    /// but never past the request's deadline. POST never is: a kernel call may have effects,
    /// and a hang is a result. A header value with a line break is refused, never sent.
    std::expected<HttpResponse, HttpFailure> send(const HttpRequest &request);

    const HttpOptions &options() const { return options_; }

private:
    std::expected<HttpResponse, HttpFailure> attempt(const HttpRequest &request, double timeout_s);

    struct Handle;
    std::unique_ptr<Handle> handle_;
    HttpOptions options_;
};

/// True for methods that may be sent twice.
bool http_idempotent(const std::string &method);
/// False when `value` holds CR, LF or NUL: as a header it would add lines of the sender's choosing.
bool http_header_safe(std::string_view value);

}  // namespace attngate
