// Instruction counts of one kernel call under valgrind's callgrind: deterministic for the
// same binary and inputs whatever else the machine is doing. A run never runs under
// valgrind itself: it spawns a counting child, this attngate's `time --metric
// instructions` under `valgrind --tool=callgrind` (count_under_callgrind), which asks
// callgrind, by client requests, to zero its counters before each call and to dump them
// after it, reads the dumps back (count_instructions) and reports the counts.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
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

/// What the child needs to rebuild the same invocations: the suite file, the plugins,
/// and the (case id, kernel label) pairs to count.
struct CountRequest {
    std::filesystem::path suite_file;
    std::vector<std::string> plugins;
    std::vector<std::pair<std::string, std::string>> labels;
    double timeout_s = 3600.0;
};

/// Why instructions cannot be counted on this machine (valgrind not on PATH), or empty.
std::string instruction_counting_unavailable();

/// Instructions of one call per (case id, kernel label), or an infrastructure error
/// naming the child's command and the end of its stderr.
Result<std::map<std::pair<std::string, std::string>, double>> count_under_callgrind(const CountRequest &request);

}  // namespace attngate
