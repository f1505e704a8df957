// Key validation and choosing a store implementation from a location.
#include "store/store.hpp"

#include <cctype>

#include "store/directory_store.hpp"
#include "store/http_store.hpp"

namespace attngate {

std::optional<std::string> invalid_key(std::string_view key) {
    if (key.empty()) return "an empty key";
    if (key.front() == '/') return "an absolute path";
    size_t start = 0;
    for (;;) {
        const size_t slash = key.find('/', start);
        const std::string_view part = key.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        // A trailing '/' (a prefix) is allowed; an empty component elsewhere is not.
        if (part.empty() && slash != std::string_view::npos) return "an empty path component";
        if (part == "." || part == "..") return fmt::format("a \"{}\" component", part);
        for (char c : part)
            if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "a backslash or control character";
        if (slash == std::string_view::npos) break;
        start = slash + 1;
        if (start == key.size()) break;
    }
    return std::nullopt;
}

Result<std::string> make_key(std::initializer_list<std::string_view> parts, std::string_view what) {
    std::string key;
    for (std::string_view p : parts) {
        if (p.empty() || p == "." || p == ".." || p.find('/') != std::string_view::npos)
            return fail(ErrorKind::BadInput, "{}: \"{}\" cannot name a stored object (expected a name without '/', not \".\" or \"..\")",
                        what, p);
        key += key.empty() ? "" : "/";
        key += p;
    }
    if (auto why = invalid_key(key)) return fail(ErrorKind::BadInput, "{}: key \"{}\" has {}", what, key, *why);
    return key;
}

std::string key_component(std::string_view raw) {
    std::string out;
    for (char c : raw) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
    if (out.empty() || out == "." || out == "..") out.insert(out.begin(), '_');
    return out;
}

Result<std::unique_ptr<Store>> open_store(const std::string &location) {
    if (location.starts_with("http://") || location.starts_with("https://")) {
        auto s = HttpStore::open(location, http_store_options_from_env());
        if (!s) return std::unexpected(s.error());
        return std::unique_ptr<Store>(std::move(*s));
    }
    if (location.find("://") != std::string::npos)
        return fail(ErrorKind::Usage, "--store {}: expected an http:// or https:// URL or a directory", location);
    return std::unique_ptr<Store>(std::make_unique<DirectoryStore>(location));
}

}  // namespace attngate
