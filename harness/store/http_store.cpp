// HTTP store over WebDAV verbs through the shared HttpClient.
#include "store/http_store.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "io/files.hpp"

namespace attngate {

namespace {

double env_number(const char *name, double def) {
    const char *v = std::getenv(name);
    if (!v || !*v) return def;
    char *end = nullptr;
    const double x = std::strtod(v, &end);
    return end && *end == '\0' && x >= 0 ? x : def;
}

bool is_unreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

/// Percent-encodes each component of a key, keeping the '/' between them.
std::string encode_key(std::string_view key) {
    std::string out;
    for (unsigned char c : key)
        out += is_unreserved(c) || c == '/' ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
    return out;
}

std::string decode(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

/// The path of an http(s) URL ("/store/" of "http://h:1/store/").
std::string url_path(const std::string &url) {
    const size_t scheme = url.find("://");
    const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return slash == std::string::npos ? "/" : url.substr(slash);
}

/// Every DAV:href in a multistatus document, whatever namespace prefix the server chose.
void collect_hrefs(const boost::property_tree::ptree &tree, std::vector<std::string> &out) {
    for (const auto &[name, child] : tree) {
        const size_t colon = name.find(':');
        const std::string local = colon == std::string::npos ? name : name.substr(colon + 1);
        if (local == "href") out.push_back(child.get_value<std::string>());
        else collect_hrefs(child, out);
    }
}

const std::string kContentVersion = "sha256:";

bool has_strong_etag(const HttpResponse &r) { return !r.etag.empty() && !r.etag.starts_with("W/"); }

Error status_error(const std::string &what, const HttpResponse &r) {
    if (r.status == 401 || r.status == 403)
        return Error{ErrorKind::Infra, fmt::format("{}: HTTP {}: not authorized (is $ATTNGATE_STORE_TOKEN set to a valid token?)", what, r.status)};
    return Error{ErrorKind::Infra, fmt::format("{}: HTTP {} from the store", what, r.status)};
}

constexpr const char *kPropfindBody =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><propfind xmlns=\"DAV:\"><prop><resourcetype/></prop></propfind>";

}  // namespace

HttpOptions http_store_options_from_env() {
    HttpOptions o;
    if (const char *t = std::getenv("ATTNGATE_STORE_TOKEN")) o.bearer_token = t;
    o.connect_timeout_s = env_number("ATTNGATE_STORE_CONNECT_TIMEOUT", 5.0);
    o.timeout_s = env_number("ATTNGATE_STORE_TIMEOUT", 60.0);
    o.retries = static_cast<int>(env_number("ATTNGATE_STORE_RETRIES", 3));
    o.max_response_bytes = static_cast<int64_t>(env_number("ATTNGATE_STORE_MAX_BYTES", static_cast<double>(int64_t{1} << 30)));
    if (const char *v = std::getenv("ATTNGATE_STORE_INSECURE"); v && std::string(v) == "1") o.verify_tls = false;
    return o;
}

HttpStore::HttpStore(std::string base, HttpOptions options) : base_(std::move(base)), base_path_(decode(url_path(base_))), client_(std::move(options)) {}

Result<std::unique_ptr<HttpStore>> HttpStore::open(const std::string &url, HttpOptions options) {
    std::string base = url;
    const size_t scheme = base.find("://");
    const size_t at = base.find('@', scheme + 3);
    if (at != std::string::npos && at < base.find('/', scheme + 3))
        return fail(ErrorKind::Usage, "--store: put credentials in $ATTNGATE_STORE_TOKEN, not in the URL");
    if (base.find_first_of("?#") != std::string::npos) return fail(ErrorKind::Usage, "--store {}: expected a URL without query or fragment", url);
    // The token goes into a header line: a line break in it would add headers of its own.
    if (!http_header_safe(options.bearer_token))
        return fail(ErrorKind::Usage, "$ATTNGATE_STORE_TOKEN: holds a line break (CR or LF); a bearer token is one line, refused rather than sent");
    if (base.back() != '/') base += '/';
    return std::unique_ptr<HttpStore>(new HttpStore(std::move(base), std::move(options)));
}

std::string HttpStore::url_of(std::string_view key) const { return base_ + encode_key(key); }

std::string HttpStore::where(std::string_view key) const { return url_of(key); }

Result<std::optional<HttpResponse>> HttpStore::fetch(std::string_view key) {
    if (auto why = invalid_key(key)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", key, *why);
    auto r = client_.send(HttpRequest{"GET", url_of(key), {}, {}, {}, 0.0});
    if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
    if (r->status == 404) return std::optional<HttpResponse>();
    if (r->status != 200) return std::unexpected(status_error("GET " + url_of(key), *r));
    return std::optional<HttpResponse>(std::move(*r));
}

Result<std::optional<StoredObject>> HttpStore::get(std::string_view key) {
    auto r = fetch(key);
    if (!r) return std::unexpected(r.error());
    if (!*r) return std::optional<StoredObject>();
    // A strong ETag is the version; without one (or with a weak one, as Apache gives for a
    // file changed in the last second) the content's hash is, checked before writing.
    std::string version = has_strong_etag(**r) ? (*r)->etag : kContentVersion + sha256_hex((*r)->body);
    return std::optional<StoredObject>(StoredObject{std::move((*r)->body), std::move(version)});
}

Result<void> HttpStore::make_collections(std::string_view key) {
    // MKCOL each ancestor in turn; 405 means it exists already.
    for (size_t slash = key.find('/'); slash != std::string_view::npos; slash = key.find('/', slash + 1)) {
        const std::string url = url_of(key.substr(0, slash + 1));
        auto r = client_.send(HttpRequest{"MKCOL", url, {}, {}, {}, 0.0});
        if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
        if (r->status != 201 && r->status != 405 && r->status != 200) return std::unexpected(status_error("MKCOL " + url, *r));
    }
    return {};
}

Result<std::string> HttpStore::put(std::string_view key, std::string_view bytes, const Precondition &pre) {
    if (auto why = invalid_key(key)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", key, *why);
    HttpRequest req{"PUT", url_of(key), std::string(bytes), "application/octet-stream", {}, 0.0};
    if (pre.kind == Precondition::Kind::MustNotExist) req.headers.emplace_back("If-None-Match", "*");
    if (pre.kind == Precondition::Kind::Version) {
        std::string etag = pre.version;
        if (etag.starts_with(kContentVersion)) {
            // Read under a content hash: check the content is unchanged, then write under the
            // strong ETag the server gives once the file is a second old, so the server
            // still refuses a writer that slips in between.
            for (int wait = 0;; ++wait) {
                auto now = fetch(key);
                if (!now) return std::unexpected(now.error());
                if (!*now) return fail(ErrorKind::Conflict, "{}: was removed since it was read", url_of(key));
                if (kContentVersion + sha256_hex((*now)->body) != pre.version) {
                    if ((*now)->body == bytes) return has_strong_etag(**now) ? (*now)->etag : kContentVersion + sha256_hex(bytes);
                    return fail(ErrorKind::Conflict, "{}: changed since it was read (content {} then, {} now)", url_of(key),
                                pre.version.substr(kContentVersion.size(), 12), sha256_hex((*now)->body).substr(0, 12));
                }
                if (has_strong_etag(**now)) {
                    etag = (*now)->etag;
                    break;
                }
                if (wait == 5) return fail(ErrorKind::Infra, "{}: the store gives no strong ETag for it, so it cannot be written conditionally", url_of(key));
                std::this_thread::sleep_for(std::chrono::milliseconds(400));
            }
        }
        req.headers.emplace_back("If-Match", etag);
    }
    for (int attempt = 0;; ++attempt) {
        auto r = client_.send(req);
        if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
        if (r->status == 200 || r->status == 201 || r->status == 204) {
            if (!r->etag.empty()) return r->etag;
            auto now = get(key);  // the server did not say: read the version back
            if (!now) return std::unexpected(now.error());
            return *now ? (*now)->version : std::string();
        }
        if (r->status == 409 && attempt == 0) {  // a missing parent collection
            if (auto m = make_collections(key); !m) return std::unexpected(m.error());
            continue;
        }
        if (r->status == 412) {
            // A retried PUT whose first attempt applied, or another writer with the same
            // bytes, is not a conflict.
            auto now = get(key);
            if (!now) return std::unexpected(now.error());
            if (*now && (*now)->bytes == bytes) return (*now)->version;
            if (!*now) return fail(ErrorKind::Conflict, "{}: was removed since it was read", url_of(key));
            return fail(ErrorKind::Conflict, "{}: changed since it was read ({} then, {} now)", url_of(key),
                        pre.kind == Precondition::Kind::Version ? "ETag " + pre.version : std::string("absent"), "ETag " + (*now)->version);
        }
        return std::unexpected(status_error("PUT " + url_of(key), *r));
    }
}

Result<void> HttpStore::list_into(const std::string &prefix, std::vector<std::string> &keys, int depth) {
    if (depth > 32) return fail(ErrorKind::Infra, "{}: folders nested too deep to list", url_of(prefix));
    const std::string url = url_of(prefix);
    auto r = client_.send(HttpRequest{"PROPFIND", url, kPropfindBody, "application/xml", {{"Depth", "1"}}, 0.0});
    if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
    if (r->status == 404) return {};
    if (r->status != 207) return std::unexpected(status_error("PROPFIND " + url, *r));
    boost::property_tree::ptree tree;
    try {
        std::istringstream in(r->body);
        boost::property_tree::read_xml(in, tree);
    } catch (const std::exception &e) {
        return fail(ErrorKind::Infra, "PROPFIND {}: the store's listing is not XML: {}", url, e.what());
    }
    std::vector<std::string> hrefs;
    collect_hrefs(tree, hrefs);
    for (const auto &raw : hrefs) {
        std::string path = decode(raw);
        if (const size_t scheme = path.find("://"); scheme != std::string::npos) path = url_path(path);
        if (!path.starts_with(base_path_)) continue;
        std::string key = path.substr(base_path_.size());
        if (key == prefix) continue;  // the folder itself
        if (auto why = invalid_key(key)) continue;
        if (key.ends_with('/')) {
            if (auto sub = list_into(key, keys, depth + 1); !sub) return sub;
        } else if (key.find(".tmp-") == std::string::npos && key.find(".davfs.tmp") == std::string::npos) {
            keys.push_back(std::move(key));
        }
    }
    return {};
}

Result<void> HttpStore::replace_prefix(std::string_view from, std::string_view to) {
    for (auto key : {from, to})
        if (auto why = invalid_key(key)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", key, *why);
    if (auto m = make_collections(to.substr(0, to.size() - 1)); !m) return std::unexpected(m.error());
    // One MOVE of the collection, over the old one (RFC 4918 9.9: Overwrite: T deletes it first).
    HttpRequest req{"MOVE", url_of(from), {}, {}, {{"Destination", url_of(to)}, {"Overwrite", "T"}}, 0.0};
    auto r = client_.send(req);
    if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
    if (r->status != 201 && r->status != 204) return std::unexpected(status_error("MOVE " + url_of(from), *r));
    return {};
}

Result<void> HttpStore::remove_prefix(std::string_view prefix) {
    if (auto why = invalid_key(prefix)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", prefix, *why);
    auto r = client_.send(HttpRequest{"DELETE", url_of(prefix), {}, {}, {}, 0.0});
    if (!r) return fail(ErrorKind::Infra, "store request failed: {}", r.error().message);
    if (r->status != 200 && r->status != 204 && r->status != 404) return std::unexpected(status_error("DELETE " + url_of(prefix), *r));
    return {};
}

Result<std::vector<std::string>> HttpStore::list(std::string_view prefix) {
    if (!prefix.empty())
        if (auto why = invalid_key(prefix)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", prefix, *why);
    std::vector<std::string> keys;
    if (auto r = list_into(std::string(prefix), keys, 0); !r) return std::unexpected(r.error());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

}  // namespace attngate
