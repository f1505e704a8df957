// Shared CLI helpers.
#include "common.hpp"

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "backend/in_process_backend.hpp"
#include "backend/remote_backend.hpp"
#include "io/supervisor.hpp"
#include "report/escape.hpp"

namespace attngate::cli {

namespace fs = std::filesystem;

Result<Suite> resolve_suite(const std::string &arg) {
    fs::path p(arg);
    std::error_code ec;  // a symlink loop or an over-long name is "no such suite file", not an exception
    if (!fs::exists(p, ec) && p.extension() != ".json" && arg.find('/') == std::string::npos) p = fs::path("suites") / (arg + ".json");
    if (!fs::exists(p, ec)) return fail(ErrorKind::Usage, "--suite {}: no such suite file{}", arg, ec ? ": " + ec.message() : "");
    return load_suite(p);
}

Result<Backends> open_backends(const KernelSources &sources, std::vector<std::string> *origins) {
    Backends backends;
    if (sources.builtins || !sources.plugins.empty()) {
        auto in_process = InProcessBackend::create(sources.plugins);
        if (!in_process) return std::unexpected(in_process.error());
        if (auto r = backends.add(std::move(*in_process)); !r) return std::unexpected(r.error());
    }
    if (origins) origins->insert(origins->end(), sources.plugins.begin(), sources.plugins.end());
    const RemoteOptions remote;
    for (const auto &cmd : sources.adapters) {
        auto b = RemoteBackend::start(cmd, remote);
        if (!b) return std::unexpected(b.error());
        if (origins) origins->push_back((*b)->origin());
        if (auto r = backends.add(std::move(*b)); !r) return std::unexpected(r.error());
    }
    for (const auto &url : sources.remotes) {
        auto b = RemoteBackend::connect(url, remote);
        if (!b) return std::unexpected(b.error());
        if (origins) origins->push_back((*b)->origin());
        if (auto r = backends.add(std::move(*b)); !r) return std::unexpected(r.error());
    }
    return backends;
}

int with_load_errors(const Backends &backends, int rc) {
    const auto errors = backends.load_errors();
    for (const auto &e : errors) fmt::print(stderr, "error: {}\n", terminal_text(e));  // an adapter's words
    return errors.empty() || rc != kExitPass ? rc : kExitDrift;
}

int run_kernels_supervised(bool no_isolation, std::string_view what_stays, const std::function<int()> &body) {
    if (!no_isolation) return body();
    const SupervisedEnd end = run_supervised(body);
    if (end.ended_early.empty()) return end.exit_code;
    fmt::print(stderr, "error: the run did not finish: attngate's process {} (--no-isolation runs the kernels in it); {}\n",
               terminal_text(end.ended_early), what_stays);
    return kExitDrift;
}

int report_error(const Error &e) {
    fmt::print(stderr, "error: {}\n", terminal_text(e.message));  // messages quote files and adapters
    return exit_code_for(e.kind);
}

}  // namespace attngate::cli
