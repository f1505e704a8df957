// File helpers: whole-file reads and atomic writes (temporary file + rename), so an
// interrupted run never leaves a half-written golden, baseline or report.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>
#include <string_view>

#include "io/error.hpp"

namespace attngate {

/// The most bytes read_file accepts by default: bigger than any golden a suite's memory
/// budget admits, small enough that a hostile file cannot exhaust memory.
inline constexpr size_t kMaxInputBytes = size_t{1} << 30;

/// Reads a whole regular file of at most max_bytes. A FIFO, device or directory is refused
/// without blocking (/dev/zero, a pipe nobody writes), and so is a file over the limit.
Result<std::string> read_file(const std::filesystem::path &path, size_t max_bytes = kMaxInputBytes);

/// Writes bytes to a new file path.tmp-XXXXXX (created exclusively, as mkstemp does), flushes
/// it and renames it over path; creates parents.
/// Only a regular file is ever replaced: a symlink, device node or FIFO at path is an error.
/// Files get mode 0644 and directories 0755 whatever the process's umask.
Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view bytes);

/// How a path about to be replaced is known to hold an earlier output of one kind: its file starts
/// with `start` and holds `mark` within its first kOutputMarkBytes, or is `nothing` (that output
/// with no rows, when it has such a form).
struct OutputMark {
    std::string_view start, mark, nothing = {};
};

inline constexpr size_t kOutputMarkBytes = 4096;

/// Checks, before anything runs, that the output `what` given by `flag` may be written at path:
/// nothing there, an empty file, or an earlier such output (mark). Anything else (a source file,
/// the config, a directory, a link, a file it cannot read) is a Usage error naming the flag and
/// the path, so that a mistyped path never replaces a file this tool did not write.
Result<void> replaceable_output(std::string_view flag, const std::filesystem::path &path, std::string_view what, OutputMark mark);

/// A directory of files one command writes: an index (case.json, index.json) that `mark` knows,
/// beside data files ending in `data` (".npy").
struct OutputDir {
    std::string_view writer;  ///< "`attngate inputs`", for messages
    std::string_view index;
    OutputMark mark;
    std::string_view data;
};

/// replaceable_output for a directory given by `flag`: absent, or a directory whose index is an
/// earlier such output's, or without one, that holds no data file. Anything else is a Usage
/// error naming the flag, the directory and the file that would be lost.
Result<void> replaceable_output_dir(std::string_view flag, const std::filesystem::path &dir, const OutputDir &kind);

/// write_file_atomic, with the new file flock()ed (LOCK_EX) before it is renamed into place:
/// the returned descriptor holds the lock until it is closed, so the file at path is locked for
/// as long as its writer lives (a run's results.json, rewritten after every case).
Result<int> write_file_atomic_locked(const std::filesystem::path &path, std::string_view bytes);

/// Whether another open file holds the flock of write_file_atomic_locked on the file at path: a
/// live writer is still replacing it. A missing or unreadable file is not locked.
bool locked_by_a_writer(const std::filesystem::path &path);

/// Creates dir and its missing parents with mode 0755 (not subject to the umask).
std::error_code create_directories_0755(const std::filesystem::path &dir);

/// path made absolute against the current directory, now: resolved before a kernel that
/// shares the process could chdir(). Empty stays empty.
std::filesystem::path absolute_path(const std::filesystem::path &path);

/// Lowercase hex SHA-256 of bytes (OpenSSL libcrypto).
std::string sha256_hex(std::string_view bytes);

/// Base64 SHA-256 of bytes, as a Content-Security-Policy hash source wants it.
std::string sha256_base64(std::string_view bytes);

}  // namespace attngate
