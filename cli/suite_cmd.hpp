// `attngate suite coverage SUITE`: the table of feature pairs a suite's cases exercise
// together, and the meaningful pairs none of them does.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace attngate::cli {

/// Adds `suite coverage` to app; returns a function that runs it when it was chosen and
/// gives its exit code (0 every meaningful pair covered, 1 a pair is missing), or -1.
std::function<int()> add_suite_commands(CLI::App &app);

}  // namespace attngate::cli
