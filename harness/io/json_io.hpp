// JSON reading with errors that name the file, the JSON path and what was expected, and
// pretty JSON writing. Boost.JSON exceptions stop here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "io/error.hpp"

namespace attngate {

namespace json = boost::json;

/// Parses text; a syntax error names the file and the byte offset.
Result<json::value> parse_json(std::string_view text, const std::string &file);
Result<json::value> load_json_file(const std::filesystem::path &path);

/// text with every byte that is not part of well-formed UTF-8 replaced by U+FFFD: a kernel's
/// stderr or a lock file line may hold anything, and a JSON file must still parse.
std::string valid_utf8(std::string_view text);

/// Serialises with two-space indentation and a trailing newline; strings are made valid UTF-8.
std::string pretty_json(const json::value &v);

/// Reads the fields of one JSON object. Getters return a default after the first error;
/// finish() reports that error, or the first field nobody asked for.
class ObjectReader {
public:
    ObjectReader(const json::value &v, std::string file, std::string path);

    bool has(std::string_view key) const;
    /// The raw field, marked as known; nullptr when absent.
    const json::value *raw(std::string_view key);

    std::string string(std::string_view key, std::string def);
    std::string required_string(std::string_view key);
    int64_t integer(std::string_view key, int64_t def, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
    int64_t required_integer(std::string_view key, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
    double number(std::string_view key, double def);
    bool boolean(std::string_view key, bool def);
    std::vector<int64_t> integer_array(std::string_view key, std::vector<int64_t> def);
    /// An array of strings; `what` names one element in the error ("a kernel label").
    std::vector<std::string> string_array(std::string_view key, const std::string &what);

    /// Takes over an error found by a nested reader (first error wins).
    void adopt(std::optional<Error> e) {
        if (e && !error_) error_ = std::move(e);
    }
    /// Records an error at key (first error wins).
    void fail_at(std::string_view key, const std::string &what);
    /// JSON path of a field of this object.
    std::string path_of(std::string_view key) const;
    const std::string &file() const { return file_; }
    bool ok() const { return !error_; }

    /// The first error, or an unknown-field error, or nothing.
    std::optional<Error> finish();

private:
    const json::object *obj_ = nullptr;
    std::string file_, path_;
    std::set<std::string, std::less<>> known_;
    std::optional<Error> error_;
};

/// The number at `key`, nothing when absent or not a number.
std::optional<double> number_at(const json::object &object, std::string_view key);

/// "number", "string", "array"... for error messages.
const char *json_kind_name(const json::value &v);

}  // namespace attngate
