// The fingerprint: the toolchain, the libraries that run (asked at run time), the machine,
// the user's lock files; and the diff between two fingerprints.
#include "results/fingerprint.hpp"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <boost/version.hpp>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#include "io/files.hpp"
#include "results/fingerprint_shape.hpp"
#include "results/loaded_libraries.hpp"
#include "results/lockfile.hpp"

namespace attngate {

namespace {

#ifndef ATTNGATE_BENCHMARK_VERSION
#define ATTNGATE_BENCHMARK_VERSION "not found at build time"
#endif
#ifndef ATTNGATE_SLEEF_VERSION
#define ATTNGATE_SLEEF_VERSION "not found at build time"
#endif
#ifndef ATTNGATE_OPENBLAS_PATH
#define ATTNGATE_OPENBLAS_PATH "libopenblas.so.0"
#endif
#ifndef ATTNGATE_BUILD_TYPE
#define ATTNGATE_BUILD_TYPE "unknown"
#endif
#ifndef ATTNGATE_CXX_FLAGS
#define ATTNGATE_CXX_FLAGS "unknown"
#endif

/// The versions of what runs (libcurl and OpenSSL ask the loaded library), what the build
/// compiled against, and the OpenBLAS file the bench loads (not loaded by a run: see
/// run/sgemm_ceiling.hpp). Every other loaded library is in "loaded".
json::object library_versions() {
    const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);
    json::object o{{"boost", fmt::format("{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100)},
                   {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
                   {"openssl", OpenSSL_version(OPENSSL_VERSION)},
                   {"libcurl", fmt::format("{} ({})", curl->version, curl->ssl_version ? curl->ssl_version : "no TLS")},
                   {"google_benchmark", ATTNGATE_BENCHMARK_VERSION},
                   {"sleef", ATTNGATE_SLEEF_VERSION},
                   {"built_against", json::object{{"openssl", OPENSSL_VERSION_TEXT}, {"libcurl", LIBCURL_VERSION}}}};
    o["openblas"] = file_origins({ATTNGATE_OPENBLAS_PATH}).at(0);
    return o;
}

/// The compiler that compiled this file (so a clang build says clang), and the flags and
/// build type CMake compiled the project with.
json::object toolchain() {
    json::object o{{"compiler", compiler_name()},
                   {"cxx_standard", static_cast<int64_t>(__cplusplus)},
                   {"build_type", ATTNGATE_BUILD_TYPE},
                   {"cxx_flags", ATTNGATE_CXX_FLAGS}};
#ifdef __GLIBCXX__
    o["cxx_stdlib"] = fmt::format("libstdc++ {} ({})", _GLIBCXX_RELEASE, __GLIBCXX__);
#elif defined(_LIBCPP_VERSION)
    o["cxx_stdlib"] = fmt::format("libc++ {}", _LIBCPP_VERSION);
#endif
    o["glibc"] = gnu_get_libc_version();
    return o;
}

/// The first value of a "key : value" field in /proc/cpuinfo, or "".
std::string cpuinfo_field(const std::string &cpuinfo, std::string_view key) {
    std::istringstream in(cpuinfo);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(key) && line.find(':') != std::string::npos) {
            const std::string v = line.substr(line.find(':') + 1);
            return v.empty() ? v : v.substr(v.find_first_not_of(' ') == std::string::npos ? v.size() : v.find_first_not_of(' '));
        }
    return "";
}

json::object cpu() {
    std::ifstream f("/proc/cpuinfo");
    const std::string info((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream flags(cpuinfo_field(info, "flags"));
    std::set<std::string> sorted{std::istream_iterator<std::string>(flags), std::istream_iterator<std::string>()};
    return json::object{{"model", cpuinfo_field(info, "model name")},
                        {"cores", static_cast<int64_t>(std::thread::hardware_concurrency())},
                        {"flags", json::array(sorted.begin(), sorted.end())}};
}

json::object os() {
    json::object o;
    std::ifstream rel("/etc/os-release");
    for (std::string line; std::getline(rel, line);)
        if (line.starts_with("PRETTY_NAME=")) {
            std::string v = line.substr(12);
            v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
            o["name"] = v;
        }
    if (struct utsname u; uname(&u) == 0) {
        o["kernel"] = fmt::format("{} {}", u.sysname, u.release);
        o["machine"] = u.machine;
    }
    return o;
}

/// Flattens nested objects into dotted keys; leaves stay JSON values.
void flatten(const json::object &o, const std::string &prefix, std::map<std::string, json::value> &out) {
    for (const auto &[k, v] : o) {
        const std::string key = prefix.empty() ? std::string(k) : prefix + "." + std::string(k);
        if (v.is_object() && !v.get_object().empty()) flatten(v.get_object(), key, out);
        else if (!v.is_object()) out[key] = v;
    }
}

std::string leaf_text(const json::value &v) {
    if (v.is_string()) return std::string(v.get_string());
    if (v.is_array()) {
        std::string s;
        for (const auto &e : v.get_array()) s += (s.empty() ? "" : " ") + (e.is_string() ? std::string(e.get_string()) : json::serialize(e));
        return s;
    }
    return json::serialize(v);
}

bool all_strings(const json::value &v) {
    return v.is_array() && std::all_of(v.get_array().begin(), v.get_array().end(), [](const json::value &e) { return e.is_string(); });
}

/// Set difference of two string lists as "+added -removed".
std::string set_change(const json::array &before, const json::array &after) {
    std::set<std::string_view> b, a;
    for (const auto &e : before) b.insert(e.get_string());
    for (const auto &e : after) a.insert(e.get_string());
    std::string s;
    for (auto x : a)
        if (!b.contains(x)) s += fmt::format("{}+{}", s.empty() ? "" : " ", x);
    for (auto x : b)
        if (!a.contains(x)) s += fmt::format("{}-{}", s.empty() ? "" : " ", x);
    return s;
}

/// What the gate runs first, in the order a bump moves it; the machine last.
constexpr std::array kDependencySections{"toolchain", "libraries", "loaded", "lockfiles", "adapters", "kernels", "plugins"};
constexpr std::array kMachineSections{"cpu", "os"};

std::string_view section_of(std::string_view key) { return key.substr(0, key.find('.')); }

bool is_machine(std::string_view key) {
    return std::find(kMachineSections.begin(), kMachineSections.end(), section_of(key)) != kMachineSections.end();
}

size_t section_rank(std::string_view key) {
    if (is_machine(key)) return kDependencySections.size() + 1;
    const auto it = std::find(kDependencySections.begin(), kDependencySections.end(), section_of(key));
    return static_cast<size_t>(it - kDependencySections.begin());  // other sections: after the named ones
}

/// A value as one line: a leaf's text; a library's package and version; a lock file's pins;
/// else a count.
std::string summary_text(const json::value &v) {
    if (!v.is_object()) return leaf_text(v);
    const json::object &o = v.get_object();
    if (const auto *packages = o.if_contains("packages"); packages && packages->is_object())
        return fmt::format("({} package{} pinned)", packages->get_object().size(), packages->get_object().size() == 1 ? "" : "s");
    if (const auto *version = o.if_contains("version"); version && version->is_string()) {
        const auto *package = o.if_contains("package");
        return package && package->is_string() ? fmt::format("{} {}", package->get_string(), version->get_string()) : std::string(version->get_string());
    }
    return fmt::format("({} entries)", o.size());
}

void diff_objects(const json::object &before, const json::object &after, const std::string &prefix, std::vector<FingerprintChange> &out) {
    const auto key_of = [&](std::string_view k) { return prefix.empty() ? std::string(k) : prefix + "." + std::string(k); };
    const auto add = [&](FingerprintChange c) {
        c.machine = is_machine(c.key);
        out.push_back(std::move(c));
    };
    const auto empty = [](const json::value &v) { return v.is_object() && v.get_object().empty(); };  // records nothing
    for (const auto &[k, old] : before) {
        const std::string key = key_of(k);
        const json::value *now = after.if_contains(k);
        if (!now && empty(old)) continue;
        if (!now) {
            // A library the later binary does not record is one it does not link (catch2 in a build without tests).
            if (prefix != "libraries") add({FingerprintChange::Kind::Removed, key, summary_text(old), ""});
        } else if (old.is_object() && now->is_object()) {
            diff_objects(old.get_object(), now->get_object(), key, out);
        } else if (all_strings(old) && all_strings(*now)) {
            if (std::string moved = set_change(old.get_array(), now->get_array()); !moved.empty())
                add({FingerprintChange::Kind::Changed, key, "", std::move(moved)});
        } else if (std::string was = summary_text(old), is = summary_text(*now); was != is) {
            add({FingerprintChange::Kind::Changed, key, std::move(was), std::move(is)});
        }
    }
    for (const auto &[k, now] : after)
        if (!before.contains(k) && !empty(now)) add({FingerprintChange::Kind::Added, key_of(k), "", summary_text(now)});
}

}  // namespace

Result<json::object> collect_fingerprint(const std::vector<const KernelInfo *> &infos, const json::object &backends,
                                         const std::vector<std::string> &lockfiles) {
    json::object kernels;
    for (const auto *k : infos) kernels[k->name] = k->version;
    json::object locks;
    for (const auto &path : lockfiles) {
        auto parsed = parse_lockfile(path);
        if (!parsed) return std::unexpected(parsed.error());
        // Keyed by base name, which fingerprint diffs compare across machines: two of one name
        // would silently keep only the last.
        const std::string name = std::filesystem::path(path).filename().string();
        if (locks.contains(name))
            return fail(ErrorKind::Usage, "--lockfile {}: a second lock file named {}; give each a distinct file name", path, name);
        locks[name] = std::move(*parsed);
    }
    std::vector<std::string> origins;
    for (const auto *k : infos) origins.push_back(k->origin);
    auto plugins = plugin_toolchains(origins);
    if (!plugins) return std::unexpected(plugins.error());
    json::object fp{{"toolchain", toolchain()}, {"libraries", library_versions()}, {"loaded", loaded_libraries()},
                    {"cpu", cpu()},             {"os", os()},                      {"kernels", kernels},
                    {"plugins", std::move(*plugins)}, {"adapters", json::object{}}, {"lockfiles", locks}};
    for (const auto &[key, value] : backends) fp[key] = value;
    return fp;
}

std::string compiler_name() {
#if defined(__clang__)
    return fmt::format("clang {}", __clang_version__);
#elif defined(__GNUC__)
    return fmt::format("g++ {}", __VERSION__);
#else
    return "unknown";
#endif
}

std::string host_name() {
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

const char *change_kind_name(FingerprintChange::Kind k) {
    switch (k) {
    case FingerprintChange::Kind::Added: return "added";
    case FingerprintChange::Kind::Removed: return "removed";
    case FingerprintChange::Kind::Changed: return "changed";
    }
    return "?";
}

std::vector<FingerprintChange> diff_fingerprints(const json::object &before, const json::object &after) {
    std::vector<FingerprintChange> out;
    // One lock file on each side under two names (an A/B's sides' files, a renamed file): one
    // lock, compared pin by pin under the later name, not one removed and another added.
    const auto *was = before.if_contains("lockfiles"), *is = after.if_contains("lockfiles");
    if (was && is && was->is_object() && is->is_object() && was->get_object().size() == 1 && is->get_object().size() == 1 &&
        was->get_object().begin()->key() != is->get_object().begin()->key()) {
        json::object renamed = before;
        renamed["lockfiles"] = json::object{{is->get_object().begin()->key(), was->get_object().begin()->value()}};
        diff_objects(renamed, after, "", out);
    } else {
        diff_objects(before, after, "", out);
    }
    std::stable_sort(out.begin(), out.end(), [](const auto &x, const auto &y) {
        return std::pair(section_rank(x.key), x.key) < std::pair(section_rank(y.key), y.key);
    });
    return out;
}

size_t machine_changes(const std::vector<FingerprintChange> &changes) {
    return static_cast<size_t>(std::count_if(changes.begin(), changes.end(), [](const auto &c) { return c.machine; }));
}

std::string describe_change(const FingerprintChange &c) {
    switch (c.kind) {
    case FingerprintChange::Kind::Added: return fmt::format("{}: added {}", c.key, c.new_value);
    case FingerprintChange::Kind::Removed: return fmt::format("{}: removed (was {})", c.key, c.old_value);
    case FingerprintChange::Kind::Changed:
        return c.old_value.empty() ? fmt::format("{}: {}", c.key, c.new_value) : fmt::format("{}: {} → {}", c.key, c.old_value, c.new_value);
    }
    return c.key;
}

std::vector<std::pair<std::string, std::string>> flatten_fingerprint(const json::object &fp) {
    std::map<std::string, json::value> flat;
    flatten(fp, "", flat);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &[k, v] : flat) out.emplace_back(k, leaf_text(v));
    return out;
}

Result<json::object> load_fingerprint(const std::filesystem::path &path) {
    auto text = read_file(path);
    if (!text) return std::unexpected(text.error());
    return parse_fingerprint(*text, path.string());
}

Result<json::object> parse_fingerprint(std::string_view text, const std::string &where) {
    auto doc = parse_json(text, where);
    if (!doc) return std::unexpected(doc.error());
    if (!doc->is_object()) return fail(ErrorKind::BadInput, "{}: at $: expected an object", where);
    const json::object &o = doc->get_object();
    if (o.contains("schema_version")) {  // a results.json
        const auto *fp = o.if_contains("fingerprint");
        if (!fp || !fp->is_object()) return fail(ErrorKind::BadInput, "{}: at $.fingerprint: expected an object (results written before fingerprints?)", where);
        if (auto bad = fingerprint_shape_error(fp->get_object(), "$.fingerprint")) return fail(ErrorKind::BadInput, "{}: at {}", where, *bad);
        return fp->get_object();
    }
    if (auto bad = fingerprint_shape_error(o)) return fail(ErrorKind::BadInput, "{}: at {}", where, *bad);
    return o;
}

std::string fingerprint_id(const json::object &fp) {
    std::string canonical;
    for (const auto &[k, v] : flatten_fingerprint(fp)) canonical += k + "=" + v + "\n";
    return sha256_hex(canonical).substr(0, 16);
}

}  // namespace attngate
