// Lock file parsing for the fingerprint: each known format to name -> version.
#include "results/lockfile.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <boost/algorithm/string/trim.hpp>

#include "io/files.hpp"

namespace attngate {

namespace {

/// npm's package-lock.json: v2/v3 "packages" keyed by node_modules/ path, v1 "dependencies".
json::object npm_packages(const json::object &doc) {
    json::object out;
    if (const auto *pkgs = doc.if_contains("packages"); pkgs && pkgs->is_object()) {
        for (const auto &[key, v] : pkgs->get_object()) {
            const std::string_view k = key;
            const size_t at = k.rfind("node_modules/");
            if (at == std::string_view::npos || !v.is_object()) continue;
            if (const auto *ver = v.get_object().if_contains("version"); ver && ver->is_string())
                out[k.substr(at + 13)] = *ver;
        }
    } else if (const auto *deps = doc.if_contains("dependencies"); deps && deps->is_object()) {
        for (const auto &[name, v] : deps->get_object())
            if (v.is_object())
                if (const auto *ver = v.get_object().if_contains("version"); ver && ver->is_string()) out[name] = *ver;
    }
    return out;
}

/// vcpkg.json: dependencies (names, with "version>=" when given), overrides pin versions.
json::object vcpkg_packages(const json::object &doc) {
    json::object out;
    if (const auto *deps = doc.if_contains("dependencies"); deps && deps->is_array())
        for (const auto &d : deps->get_array()) {
            if (d.is_string()) out[d.get_string()] = "*";
            else if (d.is_object() && d.get_object().contains("name") && d.get_object().at("name").is_string()) {
                const auto *min = d.get_object().if_contains("version>=");
                out[d.get_object().at("name").get_string()] = min && min->is_string() ? json::value(">=" + std::string(min->get_string())) : json::value("*");
            }
        }
    if (const auto *ovr = doc.if_contains("overrides"); ovr && ovr->is_array())
        for (const auto &o : ovr->get_array())
            if (o.is_object()) {
                // Fields of the wrong type are skipped like unknown ones: a lock file is recorded, not validated.
                const auto *name = o.get_object().if_contains("name");
                const auto *version = o.get_object().if_contains("version");
                if (name && name->is_string() && version && version->is_string()) out[name->get_string()] = *version;
            }
    if (const auto *base = doc.if_contains("builtin-baseline"); base && base->is_string()) out["vcpkg-baseline"] = *base;
    return out;
}

/// "zlib/1.2.13#rev%123" -> zlib, 1.2.13 (conan references).
void add_conan_ref(json::object &out, std::string_view ref) {
    ref = ref.substr(0, ref.find_first_of("#%@"));
    if (const size_t slash = ref.find('/'); slash != std::string_view::npos) out[ref.substr(0, slash)] = ref.substr(slash + 1);
}

/// conan.lock: conan 2 "requires"/"build_requires"/"python_requires", conan 1 graph_lock nodes.
json::object conan_packages(const json::object &doc) {
    json::object out;
    for (const char *key : {"requires", "build_requires", "python_requires"})
        if (const auto *a = doc.if_contains(key); a && a->is_array())
            for (const auto &r : a->get_array())
                if (r.is_string()) add_conan_ref(out, r.get_string());
    if (const auto *gl = doc.if_contains("graph_lock"); gl && gl->is_object())
        if (const auto *nodes = gl->get_object().if_contains("nodes"); nodes && nodes->is_object())
            for (const auto &[id, n] : nodes->get_object())
                if (n.is_object())
                    if (const auto *ref = n.get_object().if_contains("ref"); ref && ref->is_string()) add_conan_ref(out, ref->get_string());
    return out;
}

json::object opaque(const std::string &bytes) {
    return json::object{{"format", "opaque"}, {"sha256", sha256_hex(bytes)}, {"packages", json::object{}}};
}

}  // namespace

namespace {

/// pip's comment rule: '#' at the start of a line or after whitespace (a URL may hold '#').
size_t comment_at(std::string_view line) {
    for (size_t i = 0; i < line.size(); ++i)
        if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return i;
    return std::string_view::npos;
}

/// The logical lines of a requirements file, as pip joins them: a line ending in '\'
/// continues on the next (pip-compile's "--hash" lines), unless it holds a comment.
std::vector<std::string> logical_lines(std::string_view text) {
    std::vector<std::string> out;
    std::string pending;
    bool continued = false;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.ends_with('\r')) line.remove_suffix(1);
        if (line.ends_with('\\') && comment_at(line) == std::string_view::npos) {
            line.remove_suffix(1);
            pending.append(line).push_back(' ');
            continued = true;
            continue;
        }
        pending.append(line.substr(0, comment_at(line)));
        out.push_back(std::move(pending));
        pending.clear();
        continued = false;
    }
    if (continued) out.push_back(std::move(pending));
    return out;
}

}  // namespace

std::string normalized_package_name(std::string_view name) {
    std::string out;
    name = name.substr(0, name.find('['));  // extras: jax[cuda12] is the package jax
    for (const char c : name) {
        if (c == '-' || c == '_' || c == '.') {
            if (out.empty() || out.back() != '-') out += '-';
        } else {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

json::object parse_requirement_lines(std::string_view text) {
    json::object out;
    for (std::string line : logical_lines(text)) {
        line = line.substr(0, line.find(';'));  // environment markers
        boost::algorithm::trim(line);
        if (line.empty() || line.front() == '-') continue;
        if (const size_t at = line.find(" @ "); at != std::string::npos) {  // pip freeze: name @ url
            std::string url = boost::algorithm::trim_copy(line.substr(at + 3));
            url = url.substr(0, url.find_first_of(" \t"));
            out[normalized_package_name(boost::algorithm::trim_copy(line.substr(0, at)))] = url;
            continue;
        }
        const size_t eq = line.find("==");
        if (eq == std::string::npos || eq == 0) continue;
        const size_t v = std::min(line.find_first_not_of("= \t", eq), line.size());
        const std::string version = line.substr(v, line.find_first_of(" \t,", v) - v);  // "0.10.2 --hash=..." is 0.10.2
        const std::string name = normalized_package_name(boost::algorithm::trim_copy(line.substr(0, eq)));
        if (!name.empty() && !version.empty()) out[name] = version;
    }
    return out;
}

Result<json::object> parse_lockfile(const std::filesystem::path &path) {
    auto bytes = read_file(path);
    if (!bytes) return fail(ErrorKind::BadInput, "--lockfile {}", bytes.error().message);
    return parse_lockfile_text(*bytes, path);
}

Result<json::object> parse_lockfile_text(const std::string &bytes, const std::filesystem::path &path) {
    const std::string name = path.filename().string();
    using Parser = json::object (*)(const json::object &);
    const std::pair<const char *, std::pair<const char *, Parser>> json_formats[] = {
        {"package-lock.json", {"npm", npm_packages}}, {"vcpkg.json", {"vcpkg", vcpkg_packages}}, {"conan.lock", {"conan", conan_packages}}};
    for (const auto &[file_name, fmt_parser] : json_formats) {
        if (name != file_name) continue;
        auto doc = parse_json(bytes, path.string());
        if (!doc) return fail(ErrorKind::BadInput, "--lockfile {}", doc.error().message);
        if (!doc->is_object()) return fail(ErrorKind::BadInput, "--lockfile {}: at $: expected an object", path.string());
        return json::object{{"format", fmt_parser.first}, {"packages", fmt_parser.second(doc->get_object())}};
    }
    json::object pkgs = parse_requirement_lines(bytes);
    if (pkgs.empty()) return opaque(bytes);
    return json::object{{"format", "pip"}, {"packages", std::move(pkgs)}};
}

}  // namespace attngate
