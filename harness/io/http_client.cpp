// libcurl behind HttpClient: one easy handle per client, so connections are kept alive.
#include "io/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <random>
#include <thread>

#include <curl/curl.h>
#include <fmt/format.h>

namespace attngate {

namespace {

/// curl_global_init once per process, before the first handle.
void global_init() {
    static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
    (void)done;
}

struct Sink {
    std::string *body;
    int64_t limit;
    bool too_large = false;
};

size_t on_body(char *data, size_t size, size_t n, void *user) {
    auto *sink = static_cast<Sink *>(user);
    const size_t bytes = size * n;
    if (static_cast<int64_t>(sink->body->size() + bytes) > sink->limit) {
        sink->too_large = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    sink->body->append(data, bytes);
    return bytes;
}

/// Keeps the Content-Type and ETag response headers.
size_t on_header(char *data, size_t size, size_t n, void *user) {
    auto *r = static_cast<HttpResponse *>(user);
    const std::string_view line(data, size * n);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
        if (name == "content-type") r->content_type = value;
        if (name == "etag") r->etag = value;
    }
    return size * n;
}

struct Slist {
    curl_slist *list = nullptr;
    ~Slist() { curl_slist_free_all(list); }
    void add(const std::string &s) { list = curl_slist_append(list, s.c_str()); }
};

}  // namespace

struct HttpClient::Handle {
    CURL *curl = nullptr;
    Handle() {
        global_init();
        curl = curl_easy_init();
    }
    ~Handle() {
        if (curl) curl_easy_cleanup(curl);
    }
};

bool http_idempotent(const std::string &method) {
    return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" || method == "PROPFIND" || method == "MKCOL";
}

HttpClient::HttpClient(HttpOptions options) : handle_(std::make_unique<Handle>()), options_(std::move(options)) {}
HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient &&) noexcept = default;
HttpClient &HttpClient::operator=(HttpClient &&) noexcept = default;

bool http_header_safe(std::string_view value) {
    return std::ranges::none_of(value, [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

std::expected<HttpResponse, HttpFailure> HttpClient::attempt(const HttpRequest &req, double timeout) {
    CURL *c = handle_->curl;
    if (!c) return std::unexpected(HttpFailure{HttpFailure::Kind::Other, "libcurl could not make a handle"});
    curl_easy_reset(c);
    HttpResponse response;
    Sink sink{&response.body, options_.max_response_bytes};
    Slist headers;
    // libcurl sends header lines as given: a line break in one would add headers of its own.
    const bool safe = http_header_safe(req.content_type) && http_header_safe(options_.bearer_token) &&
                      std::ranges::all_of(req.headers, [](const auto &h) { return http_header_safe(h.first) && http_header_safe(h.second); });
    if (!safe) return std::unexpected(HttpFailure{HttpFailure::Kind::Other, fmt::format("{} {}: a header holds a line break; not sent", req.method, req.url)});
    if (!req.content_type.empty()) headers.add("Content-Type: " + req.content_type);
    if (!options_.bearer_token.empty()) headers.add("Authorization: Bearer " + options_.bearer_token);
    for (const auto &[name, value] : req.headers) headers.add(name + ": " + value);
    headers.add("Expect:");  // no 100-continue round trip before a body

    curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (req.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (req.method == "PUT" || req.method == "POST" || !req.body.empty()) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout * 1000));
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options_.max_response_bytes));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);

    const CURLcode rc = curl_easy_perform(c);
    const std::string what = fmt::format("{} {}", req.method, req.url);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
        return response;
    }
    if (sink.too_large || rc == CURLE_FILESIZE_EXCEEDED)
        return std::unexpected(HttpFailure{HttpFailure::Kind::TooLarge,
                                           fmt::format("{}: response larger than the {} B limit", what, options_.max_response_bytes)});
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return std::unexpected(HttpFailure{HttpFailure::Kind::Timeout,
                                           req.deadline ? fmt::format("{}: no complete answer within {}", what, req.deadline_what)
                                                        : fmt::format("{}: no complete answer within {:g} s", what, timeout)});
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR ||
        rc == CURLE_GOT_NOTHING)
        return std::unexpected(HttpFailure{HttpFailure::Kind::Connect, fmt::format("{}: {}", what, curl_easy_strerror(rc))});
    return std::unexpected(HttpFailure{HttpFailure::Kind::Other, fmt::format("{}: {}", what, curl_easy_strerror(rc))});
}

std::expected<HttpResponse, HttpFailure> HttpClient::send(const HttpRequest &req) {
    const int attempts = http_idempotent(req.method) ? 1 + std::max(0, options_.retries) : 1;
    std::minstd_rand jitter(std::random_device{}());
    double delay = options_.backoff_s;
    const double timeout = req.timeout_s > 0 ? req.timeout_s : options_.timeout_s;
    const auto left = [&] {
        return req.deadline ? std::chrono::duration<double>(*req.deadline - std::chrono::steady_clock::now()).count() : timeout;
    };
    std::expected<HttpResponse, HttpFailure> last;
    for (int i = 0; i < attempts; ++i) {
        if (left() <= 0)  // never reached before the first attempt: callers check their deadline
            return std::unexpected(HttpFailure{HttpFailure::Kind::Timeout, fmt::format("{} {}: no complete answer within {}", req.method,
                                                                                       req.url, req.deadline_what)});
        last = attempt(req, std::max(0.001, std::min(timeout, left())));
        const bool retry = !last ? last.error().kind != HttpFailure::Kind::TooLarge : last->status >= 500;
        if (!retry || i + 1 == attempts) break;
        // Full jitter: a fleet of runners retrying together does not retry in lockstep.
        const double wait = delay * std::uniform_real_distribution<double>(0.5, 1.5)(jitter);
        if (wait >= left()) break;  // no time left for another attempt within the deadline
        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
        delay *= 2;
    }
    return last;
}

}  // namespace attngate
