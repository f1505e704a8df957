// Instruction counts of one kernel call under valgrind's callgrind: deterministic for the
// same binary and inputs whatever else the machine is doing. The counting process runs
// under `valgrind --tool=callgrind` (callgrind_argv) and asks callgrind, by client
// requests, to zero its counters before the call and to dump them after it; it then
// reads the dump back.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/error.hpp"

namespace attngate {

/// The environment variable naming callgrind's --callgrind-out-file for the counting
/// process (its dumps are that path plus ".1", ".2", ...).
inline constexpr const char *kCallgrindOutEnv = "ATTNGATE_CALLGRIND_OUT";

/// The command prefix that runs a program under callgrind writing to out_file.
std::vector<std::string> callgrind_argv(const std::filesystem::path &out_file);

/// Instructions executed by one call of `call` (all threads), after one uncounted warm-up
/// call. An error when this process is not under callgrind, kCallgrindOutEnv is unset, or
/// attngate was built without valgrind's headers.
Result<double> count_instructions(const std::function<void()> &call);

/// The "totals:" (else "summary:") figure of a callgrind dump, or why there is none.
Result<double> callgrind_total(const std::string &dump, const std::string &where);

}  // namespace attngate
