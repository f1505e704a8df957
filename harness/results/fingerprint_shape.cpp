// The fingerprint's shape, as docs/results.schema.json's $defs/fingerprint states it.
#include "results/fingerprint_shape.hpp"

#include <functional>

#include <fmt/format.h>

namespace attngate {

namespace json = boost::json;

namespace {

using Check = std::function<std::optional<std::string>(const json::value &, const std::string &)>;

std::optional<std::string> expected(const std::string &at, const char *what) { return fmt::format("{}: expected {}", at, what); }

const Check is_string = [](const json::value &v, const std::string &at) { return v.is_string() ? std::nullopt : expected(at, "a string"); };

const Check is_integer = [](const json::value &v, const std::string &at) {
    return v.is_int64() || v.is_uint64() ? std::nullopt : expected(at, "an integer");
};

const Check is_strings = [](const json::value &v, const std::string &at) -> std::optional<std::string> {
    if (!v.is_array()) return expected(at, "an array of strings");
    for (size_t i = 0; i < v.get_array().size(); ++i)
        if (auto e = is_string(v.get_array()[i], fmt::format("{}[{}]", at, i))) return e;
    return std::nullopt;
};

/// An object whose named fields (when present) pass their check; `rest` checks the others.
Check object_of(std::vector<std::pair<std::string, Check>> fields, Check rest = nullptr) {
    return [fields = std::move(fields), rest = std::move(rest)](const json::value &v, const std::string &at) -> std::optional<std::string> {
        if (!v.is_object()) return expected(at, "an object");
        for (const auto &[key, value] : v.get_object()) {
            const std::string where = fmt::format("{}.{}", at, std::string_view(key));
            const Check *check = &rest;
            for (const auto &[name, c] : fields)
                if (name == key) check = &c;
            if (*check)
                if (auto e = (*check)(value, where)) return e;
        }
        return std::nullopt;
    };
}

Check map_of(Check each) { return object_of({}, std::move(each)); }

const Check unknown = [](const json::value &, const std::string &at) { return std::optional<std::string>(at + ": not a field of a file origin"); };

/// {path, and package + version, or sha256, or missing: true}: exactly one of the three.
const Check file_origin = [](const json::value &v, const std::string &at) -> std::optional<std::string> {
    const Check is_true = [](const json::value &t, const std::string &w) { return t == json::value(true) ? std::nullopt : expected(w, "true"); };
    if (auto e = object_of({{"path", is_string}, {"package", is_string}, {"version", is_string}, {"sha256", is_string}, {"missing", is_true}},
                           unknown)(v, at))
        return e;
    if (!v.get_object().contains("path")) return fmt::format("{}: expected a field \"path\"", at);
    const json::object &o = v.get_object();
    if (o.at("path").get_string().empty()) return expected(at + ".path", "a non-empty string");
    const int ways = (o.contains("package") && o.contains("version")) + o.contains("sha256") + o.contains("missing");
    return ways == 1 ? std::nullopt : expected(at, "one of package and version, sha256, or missing");
};

const Check cores = [](const json::value &v, const std::string &at) {
    return v.is_uint64() || (v.is_int64() && v.get_int64() >= 0) ? std::nullopt : expected(at, "a count of cores");
};

const Check lock_format = [](const json::value &v, const std::string &at) -> std::optional<std::string> {
    for (const char *f : {"pip", "npm", "vcpkg", "conan", "opaque"})
        if (v.is_string() && v.get_string() == f) return std::nullopt;
    return expected(at, "pip, npm, vcpkg, conan or opaque");
};

/// `inner`, and the object holds `keys`.
Check with_keys(Check inner, std::initializer_list<const char *> keys) {
    return [inner = std::move(inner), names = std::vector<const char *>(keys)](const json::value &v, const std::string &at) -> std::optional<std::string> {
        if (auto e = inner(v, at)) return e;
        for (const char *k : names)
            if (!v.get_object().contains(k)) return fmt::format("{}: expected a field \"{}\"", at, k);
        return std::nullopt;
    };
}

const Check &fingerprint() {
    static const Check check = object_of({
        {"toolchain", object_of({{"compiler", is_string}, {"cxx_standard", is_integer}, {"cxx_stdlib", is_string}, {"glibc", is_string},
                                 {"build_type", is_string}, {"cxx_flags", is_string}})},
        {"libraries", object_of({{"openblas", file_origin}, {"built_against", map_of(is_string)}},
                                [](const json::value &v, const std::string &at) {
                                    return v.is_string() || v.is_object() ? std::nullopt : expected(at, "a string or an object");
                                })},
        {"loaded", map_of(file_origin)},
        {"cpu", object_of({{"model", is_string}, {"cores", cores}, {"flags", is_strings}})},
        {"os", map_of(is_string)},
        {"kernels", map_of(is_string)},
        {"plugins", map_of(with_keys(object_of({{"compilers", is_strings}, {"needed", map_of(file_origin)}, {"runpath", is_string}}),
                                     {"compilers", "needed"}))},
        {"adapters", map_of(nullptr)},
        {"lockfiles", map_of(with_keys(object_of({{"format", lock_format}, {"packages", map_of(is_string)}, {"sha256", is_string}}), {"format"}))},
    });
    return check;
}

}  // namespace

std::optional<std::string> fingerprint_shape_error(const json::object &fp, const std::string &at) { return fingerprint()(json::value(fp), at); }

}  // namespace attngate
