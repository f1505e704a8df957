// `attngate conform`: the conformance check on built-in, plugin and adapter kernels alike.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace attngate::cli {

/// Adds `conform` to app; returns a function that runs it when it was chosen and gives its
/// exit code (0 every kernel conforms, 1 one does not or a kernel source did not load), or -1.
std::function<int()> add_conform_command(CLI::App &app);

}  // namespace attngate::cli
