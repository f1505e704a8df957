// The counting child of `--perf-metric instructions`: this attngate's `time --metric
// instructions` subcommand spawned under valgrind's callgrind for the case x kernels to
// count, its counts read back. The run itself never runs under valgrind: only this child.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/error.hpp"

namespace attngate {

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
