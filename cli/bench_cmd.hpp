// `attngate bench`: the built-in kernels' GFLOP/s beside the machine's sgemm ceiling.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace attngate::cli {

/// Adds bench to app; returns a function that runs it when it was chosen and gives its
/// exit code, or -1 when it was not.
std::function<int()> add_bench_command(CLI::App &app);

}  // namespace attngate::cli
