// The perf subcommands beyond `run`: `time` (timing samples only, what `ab` drives),
// `compare` (two results files) and `ab` (paired A/B of two builds).
#pragma once

#include <CLI/CLI.hpp>

namespace attngate::cli {

/// Adds time, compare and ab to app; returns a function that runs whichever was chosen
/// and gives its exit code, or -1 when none of them was.
std::function<int()> add_perf_commands(CLI::App &app);

}  // namespace attngate::cli
