// Shared CLI helpers.
#include "common.hpp"

#include <filesystem>

#include <fmt/format.h>

namespace attngate::cli {

namespace fs = std::filesystem;

Result<Suite> resolve_suite(const std::string &arg) {
    fs::path p(arg);
    if (!fs::exists(p) && p.extension() != ".json" && arg.find('/') == std::string::npos) p = fs::path("suites") / (arg + ".json");
    if (!fs::exists(p)) return fail(ErrorKind::Usage, "--suite {}: no such suite file", arg);
    return load_suite(p);
}

Result<KernelRegistry> registry_with(const std::vector<std::string> &plugins) {
    KernelRegistry reg = KernelRegistry::with_builtins();
    for (const auto &p : plugins)
        if (auto r = reg.load_plugin(p); !r) return std::unexpected(r.error());
    return reg;
}

int report_error(const Error &e) {
    fmt::print(stderr, "error: {}\n", e.message);
    return exit_code_for(e.kind);
}

}  // namespace attngate::cli
