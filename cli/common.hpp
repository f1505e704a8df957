// Helpers every subcommand shares: finding the suite, loading plugins, reporting errors.
#pragma once

#include <string>
#include <vector>

#include "kernel_registry.hpp"
#include "suite.hpp"

namespace attngate::cli {

/// --suite accepts a path or a name of a file in suites/.
Result<Suite> resolve_suite(const std::string &arg);

/// The built-in kernels plus the given plugins.
Result<KernelRegistry> registry_with(const std::vector<std::string> &plugins);

/// Prints "error: ..." to stderr and returns the exit code for the error's kind.
int report_error(const Error &e);

}  // namespace attngate::cli
