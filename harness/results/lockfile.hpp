// Users' own lock files (pip freeze / requirements, package-lock.json, vcpkg.json,
// conan.lock, plain name==version lines) read into name -> version for the fingerprint.
#pragma once

#include <filesystem>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// Reads one lock file: {"format": "pip"|"npm"|"vcpkg"|"conan"|"opaque", "packages": {name: version}}.
/// A file in no known format is recorded by its SHA-256 ("format": "opaque", "sha256": ...).
/// A missing file, or a known JSON format that does not parse, is an error naming the file.
Result<json::object> parse_lockfile(const std::filesystem::path &path);
/// The same on a lock file's bytes; `path` picks the format by its file name.
Result<json::object> parse_lockfile_text(const std::string &bytes, const std::filesystem::path &path);

/// Parses "name==version" lines (pip freeze, requirements.txt, pip-compile with hashes:
/// continuations are joined as pip joins them); comments and options are ignored, names
/// normalised (PEP 503). Returns no packages when no line has that shape.
json::object parse_requirement_lines(std::string_view text);

/// A package name as PEP 503 compares them: lower case, each run of '-', '_', '.' one '-'
/// (ml_dtypes and ML.Dtypes are ml-dtypes), extras dropped.
std::string normalized_package_name(std::string_view name);

}  // namespace attngate
