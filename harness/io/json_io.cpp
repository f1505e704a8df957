// JSON reading and writing helpers.
#include "io/json_io.hpp"

#include <cmath>

#include <boost/json/basic_parser_impl.hpp>

#include "io/files.hpp"

namespace attngate {

namespace {
/// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629), or 0.
size_t utf8_sequence(std::string_view text, size_t i) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len > 1 && i + len > text.size()) return 0;
    for (size_t k = 1; k < len; ++k)
        if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return 0;
    if (len >= 3) {  // no overlong forms, no surrogates, nothing above U+10FFFF
        const auto b1 = static_cast<unsigned char>(text[i + 1]);
        if ((b == 0xe0 && b1 < 0xa0) || (b == 0xed && b1 > 0x9f) || (b == 0xf0 && b1 < 0x90) || (b == 0xf4 && b1 > 0x8f)) return 0;
    }
    return len;
}

/// The offset of the first byte that is not well-formed UTF-8, or text.size().
size_t first_invalid_utf8(std::string_view text) {
    size_t i = 0;
    while (i < text.size()) {
        const size_t len = utf8_sequence(text, i);
        if (len == 0) return i;
        i += len;
    }
    return i;
}

/// Boost.JSON's own value-building handler, plus what it lacks: a key given twice in one
/// object is an error (Boost.JSON keeps the last silently, so an edited suite could hide a
/// setting). Keys are compared after unescaping.
struct UniqueKeyHandler {
    static constexpr size_t max_object_size = json::object::max_size();
    static constexpr size_t max_array_size = json::array::max_size();
    static constexpr size_t max_key_size = json::string::max_size();
    static constexpr size_t max_string_size = json::string::max_size();

    json::value_stack st;
    std::vector<std::set<std::string, std::less<>>> keys;  // one set per open object
    std::string key;                                        // the key being read
    std::optional<std::string> duplicate;
    bool out_of_range = false;

    UniqueKeyHandler() { st.reset(); }

    bool on_document_begin(boost::system::error_code &) { return true; }
    bool on_document_end(boost::system::error_code &) { return true; }
    bool on_object_begin(boost::system::error_code &) {
        keys.emplace_back();
        return true;
    }
    bool on_object_end(size_t n, boost::system::error_code &) {
        keys.pop_back();
        st.push_object(n);
        return true;
    }
    bool on_array_begin(boost::system::error_code &) { return true; }
    bool on_array_end(size_t n, boost::system::error_code &) {
        st.push_array(n);
        return true;
    }
    bool on_key_part(json::string_view s, size_t, boost::system::error_code &) {
        key.append(s.data(), s.size());
        st.push_chars(s);
        return true;
    }
    bool on_key(json::string_view s, size_t, boost::system::error_code &ec) {
        key.append(s.data(), s.size());
        if (!keys.back().insert(key).second) {
            duplicate = key;
            ec = json::error::syntax;
            return false;
        }
        key.clear();
        st.push_key(s);
        return true;
    }
    bool on_string_part(json::string_view s, size_t, boost::system::error_code &) {
        st.push_chars(s);
        return true;
    }
    bool on_string(json::string_view s, size_t, boost::system::error_code &) {
        st.push_string(s);
        return true;
    }
    bool on_number_part(json::string_view, boost::system::error_code &) { return true; }
    bool on_int64(int64_t i, json::string_view, boost::system::error_code &) {
        st.push_int64(i);
        return true;
    }
    bool on_uint64(uint64_t u, json::string_view, boost::system::error_code &) {
        st.push_uint64(u);
        return true;
    }
    bool on_double(double d, json::string_view, boost::system::error_code &ec) {
        if (!std::isfinite(d)) {  // 1e99999 parses as infinity, which no JSON writer can write back
            out_of_range = true;
            ec = json::error::syntax;
            return false;
        }
        st.push_double(d);
        return true;
    }
    bool on_bool(bool b, boost::system::error_code &) {
        st.push_bool(b);
        return true;
    }
    bool on_null(boost::system::error_code &) {
        st.push_null();
        return true;
    }
    bool on_comment_part(json::string_view, boost::system::error_code &) { return true; }
    bool on_comment(json::string_view, boost::system::error_code &) { return true; }
};

/// "line 2, column 14 (byte 27)": where an editor finds byte `at` (columns in characters).
std::string json_place(std::string_view text, size_t at) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') ++line, column = 1;
        else if ((c & 0xC0) != 0x80) ++column;
    }
    return fmt::format("line {}, column {} (byte {})", line, column, at);
}
}  // namespace

Result<json::value> parse_json(std::string_view text, const std::string &file) {
    json::basic_parser<UniqueKeyHandler> parser{json::parse_options{}};
    boost::system::error_code ec;
    const size_t used = parser.write_some(false, text.data(), text.size(), ec);
    // The parser stops after one complete value: what follows must be whitespace.
    if (const size_t more = text.find_first_not_of(" \t\r\n", used); !ec && more != std::string_view::npos)
        return fail(ErrorKind::BadInput, "{}: {}: expected end of JSON, found more text", file, json_place(text, more));
    if (parser.handler().out_of_range)
        return fail(ErrorKind::BadInput, "{}: {}: invalid JSON: a number too large for a double", file, json_place(text, used));
    if (parser.handler().duplicate)
        return fail(ErrorKind::BadInput, "{}: {}: invalid JSON: key \"{}\" appears twice in one object", file, json_place(text, used),
                    valid_utf8(*parser.handler().duplicate));
    if (ec) {
        // Boost.JSON says only "syntax error" for these two; say what it is.
        if (text.starts_with("\xEF\xBB\xBF"))
            return fail(ErrorKind::BadInput, "{}: line 1, column 1 (byte 0): invalid JSON: starts with a UTF-8 byte-order mark; save it without one", file);
        if (const size_t bad = first_invalid_utf8(text); bad <= used && bad < text.size())
            return fail(ErrorKind::BadInput, "{}: {}: invalid JSON: not valid UTF-8", file, json_place(text, bad));
        return fail(ErrorKind::BadInput, "{}: {}: invalid JSON: {}", file, json_place(text, used), ec.message());
    }
    return parser.handler().st.release();
}

Result<json::value> load_json_file(const std::filesystem::path &path) {
    auto text = read_file(path);
    if (!text) return std::unexpected(text.error());
    return parse_json(*text, path.string());
}

std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const size_t len = utf8_sequence(text, i);
        if (len == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
            ++i;
        } else {
            out.append(text.substr(i, len));
            i += len;
        }
    }
    return out;
}

namespace {
/// A scalar as JSON text; strings made valid UTF-8 first, so that every file written parses.
std::string scalar(const json::value &v) {
    return v.is_string() ? json::serialize(json::string(valid_utf8(v.get_string()))) : json::serialize(v);
}

void pretty(const json::value &v, std::string &out, int indent) {
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    switch (v.kind()) {
    case json::kind::object: {
        const auto &o = v.get_object();
        if (o.empty()) { out += "{}"; return; }
        out += "{\n";
        bool first = true;
        // Two keys that differ only in bytes that are not UTF-8 become one key here; the first
        // is kept, so that what is written never has a key twice (parse_json refuses that).
        std::set<std::string, std::less<>> written;
        for (const auto &kv : o) {
            std::string key = valid_utf8(kv.key());
            if (!written.insert(key).second) continue;
            if (!first) out += ",\n";
            first = false;
            out += pad + json::serialize(json::string(key)) + ": ";
            pretty(kv.value(), out, indent + 2);
        }
        out += "\n" + std::string(static_cast<size_t>(indent), ' ') + "}";
        return;
    }
    case json::kind::array: {
        const auto &a = v.get_array();
        bool scalars = true;
        for (const auto &e : a) scalars = scalars && !e.is_structured();
        if (a.empty() || scalars) {
            out += "[";
            for (size_t i = 0; i < a.size(); ++i) out += (i ? "," : "") + scalar(a[i]);
            out += "]";
            return;
        }
        out += "[\n";
        bool first = true;
        for (const auto &e : a) {
            if (!first) out += ",\n";
            first = false;
            out += pad;
            pretty(e, out, indent + 2);
        }
        out += "\n" + std::string(static_cast<size_t>(indent), ' ') + "]";
        return;
    }
    default:
        out += scalar(v);
    }
}
}  // namespace

std::string pretty_json(const json::value &v) {
    std::string out;
    pretty(v, out, 0);
    out += "\n";
    return out;
}

const char *json_kind_name(const json::value &v) {
    switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
    }
    return "a value";
}

ObjectReader::ObjectReader(const json::value &v, std::string file, std::string path)
    : file_(std::move(file)), path_(std::move(path)) {
    if (!v.is_object()) {
        error_ = Error{ErrorKind::BadInput, fmt::format("{}: {}: expected an object, got {}", file_, path_, json_kind_name(v))};
    } else {
        obj_ = &v.get_object();
    }
}

std::string ObjectReader::path_of(std::string_view key) const { return fmt::format("{}.{}", path_, key); }

void ObjectReader::fail_at(std::string_view key, const std::string &what) {
    if (!error_) error_ = Error{ErrorKind::BadInput, fmt::format("{}: {}: {}", file_, key.empty() ? path_ : path_of(key), what)};
}

bool ObjectReader::has(std::string_view key) const { return obj_ && obj_->contains(key); }

const json::value *ObjectReader::raw(std::string_view key) {
    known_.insert(std::string(key));
    if (!obj_) return nullptr;
    return obj_->if_contains(key);
}

std::string ObjectReader::string(std::string_view key, std::string def) {
    const json::value *v = raw(key);
    if (!v || error_) return def;
    if (!v->is_string()) {
        fail_at(key, fmt::format("expected a string, got {}", json_kind_name(*v)));
        return def;
    }
    return std::string(v->get_string());
}

std::string ObjectReader::required_string(std::string_view key) {
    if (obj_ && !has(key)) fail_at(key, "required field is missing (expected a string)");
    return string(key, "");
}

int64_t ObjectReader::integer(std::string_view key, int64_t def, int64_t min, int64_t max) {
    const json::value *v = raw(key);
    if (!v || error_) return def;
    int64_t x = 0;
    if (v->is_int64()) x = v->get_int64();
    else if (v->is_uint64() && v->get_uint64() <= uint64_t(INT64_MAX)) x = int64_t(v->get_uint64());
    else if (v->is_uint64()) {  // 2^63 and above: an integer, just too large
        fail_at(key, fmt::format("expected an integer <= {}, got {}", max, v->get_uint64()));
        return def;
    } else {
        fail_at(key, fmt::format("expected an integer, got {}", json_kind_name(*v)));
        return def;
    }
    if (x < min || x > max) {
        if (max == INT64_MAX) fail_at(key, fmt::format("expected an integer >= {}, got {}", min, x));
        else fail_at(key, fmt::format("expected an integer in [{}, {}], got {}", min, max, x));
        return def;
    }
    return x;
}

int64_t ObjectReader::required_integer(std::string_view key, int64_t min, int64_t max) {
    if (obj_ && !has(key)) fail_at(key, "required field is missing (expected an integer)");
    return integer(key, 0, min, max);
}

double ObjectReader::number(std::string_view key, double def) {
    const json::value *v = raw(key);
    if (!v || error_) return def;
    if (!v->is_number()) {
        fail_at(key, fmt::format("expected a number, got {}", json_kind_name(*v)));
        return def;
    }
    return v->to_number<double>();
}

bool ObjectReader::boolean(std::string_view key, bool def) {
    const json::value *v = raw(key);
    if (!v || error_) return def;
    if (!v->is_bool()) {
        fail_at(key, fmt::format("expected true or false, got {}", json_kind_name(*v)));
        return def;
    }
    return v->get_bool();
}

std::vector<int64_t> ObjectReader::integer_array(std::string_view key, std::vector<int64_t> def) {
    const json::value *v = raw(key);
    if (!v || error_) return def;
    if (!v->is_array()) {
        fail_at(key, fmt::format("expected an array of integers, got {}", json_kind_name(*v)));
        return def;
    }
    std::vector<int64_t> out;
    for (size_t i = 0; i < v->get_array().size(); ++i) {
        const auto &e = v->get_array()[i];
        if (!e.is_int64()) {
            fail_at(fmt::format("{}[{}]", key, i), fmt::format("expected an integer, got {}", json_kind_name(e)));
            return def;
        }
        out.push_back(e.get_int64());
    }
    return out;
}

std::vector<std::string> ObjectReader::string_array(std::string_view key, const std::string &what) {
    const json::value *v = raw(key);
    std::vector<std::string> out;
    if (!v || error_) return out;
    if (!v->is_array()) {
        fail_at(key, fmt::format("expected an array of strings ({}s)", what));
        return {};
    }
    for (size_t i = 0; i < v->get_array().size(); ++i) {
        const auto &e = v->get_array()[i];
        if (!e.is_string()) {
            fail_at(fmt::format("{}[{}]", key, i), fmt::format("expected {} (a string), got {}", what, json_kind_name(e)));
            return {};
        }
        out.emplace_back(e.get_string());
    }
    return out;
}

std::optional<Error> ObjectReader::finish() {
    if (error_) return error_;
    if (obj_) {
        for (const auto &kv : *obj_) {
            if (!known_.contains(kv.key())) {
                std::string fields;
                for (const auto &k : known_) fields += (fields.empty() ? "" : ", ") + k;
                return Error{ErrorKind::BadInput, fmt::format("{}: {}: unknown field (expected one of: {})", file_, path_of(kv.key()), fields)};
            }
        }
    }
    return std::nullopt;
}

std::optional<double> number_at(const json::object &object, std::string_view key) {
    if (const json::value *v = object.if_contains(key); v && v->is_number()) return v->to_number<double>();
    return std::nullopt;
}

}  // namespace attngate
