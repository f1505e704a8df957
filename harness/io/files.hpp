// File helpers: whole-file reads and atomic writes (temporary file + rename), so an
// interrupted run never leaves a half-written golden, baseline or report.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "io/error.hpp"

namespace attngate {

Result<std::string> read_file(const std::filesystem::path &path);

/// Writes bytes to path.tmp-<pid>, flushes it and renames it over path; creates parents.
Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view bytes);

/// Lowercase hex SHA-256 of bytes (OpenSSL libcrypto).
std::string sha256_hex(std::string_view bytes);

}  // namespace attngate
