// The fleet's store: objects under one base URL on an HTTP server with WebDAV (GET, PUT,
// PROPFIND for listings, MKCOL for folders). Conditional writes are If-Match with the ETag
// that was read, or If-None-Match: * for "must not exist"; a 412 answer is a conflict.
// Requests go through the shared libcurl client (timeouts, retries with backoff and
// jitter, a response-size limit, TLS verification) with a bearer token that is sent but
// never printed.
#pragma once

#include <memory>

#include "io/http_client.hpp"
#include "store/store.hpp"

namespace attngate {

/// HttpOptions from the environment: ATTNGATE_STORE_TOKEN (bearer token),
/// ATTNGATE_STORE_CONNECT_TIMEOUT and ATTNGATE_STORE_TIMEOUT (seconds; 5 and 60),
/// ATTNGATE_STORE_RETRIES (3), ATTNGATE_STORE_MAX_BYTES (1 GiB) and
/// ATTNGATE_STORE_INSECURE=1 (turns TLS verification off; nothing else does).
HttpOptions http_store_options_from_env();

class HttpStore final : public Store {
public:
    /// `url` is the base every key is resolved under; a missing trailing '/' is added.
    static Result<std::unique_ptr<HttpStore>> open(const std::string &url, HttpOptions options);

    std::string where(std::string_view key) const override;
    std::string describe() const override { return base_; }
    Result<std::optional<StoredObject>> get(std::string_view key) override;
    Result<std::string> put(std::string_view key, std::string_view bytes, const Precondition &pre) override;
    Result<std::vector<std::string>> list(std::string_view prefix) override;
    Result<void> replace_prefix(std::string_view from, std::string_view to) override;
    Result<void> remove_prefix(std::string_view prefix) override;

private:
    HttpStore(std::string base, HttpOptions options);
    std::string url_of(std::string_view key) const;
    Result<std::optional<HttpResponse>> fetch(std::string_view key);
    Result<void> make_collections(std::string_view key);
    Result<void> list_into(const std::string &prefix, std::vector<std::string> &keys, int depth);

    std::string base_;       ///< ends with '/', no user:password
    std::string base_path_;  ///< the URL's path, e.g. "/store/"
    HttpClient client_;
};

}  // namespace attngate
