// Shared CLI helpers.
#include "common.hpp"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <string>
#include <filesystem>

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

void add_kernel_source_options(CLI::App *cmd, KernelSources &sources) {
    cmd->add_option("--plugin", sources.plugins, "kernel plugin .so to load (repeatable); its kernels run every case they support");
    cmd->add_option("--adapter", sources.adapters,
                    "start a kernel adapter: a command line that serves docs/protocol.md when given --http HOST:PORT "
                    "(repeatable), e.g. \".venv/jax-new/bin/python kernels/jax/adapter.py\"");
    cmd->add_option("--remote", sources.remotes,
                    "an adapter already serving at this URL (repeatable); its bearer token is read from $ATTNGATE_ADAPTER_TOKEN");
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

void add_store_options(CLI::App *cmd, StoreArgs &args) {
    cmd->add_option("--store", args.store,
                    "where goldens, baselines, pricing, workloads and history live: an http(s):// URL of a WebDAV server "
                    "(token from $ATTNGATE_STORE_TOKEN) or a directory; default $ATTNGATE_STORE, else --baselines");
    args.baselines_option = cmd->add_option("--baselines", args.baselines, "baselines directory (a directory store)")->capture_default_str();
}

Result<std::unique_ptr<Store>> open_store(const StoreArgs &args) {
    if (!args.store.empty()) return attngate::open_store(args.store);
    if (args.baselines_option && args.baselines_option->count() > 0) return attngate::open_store(args.baselines);
    if (const char *env = std::getenv("ATTNGATE_STORE"); env && *env) return attngate::open_store(env);
    return attngate::open_store(args.baselines);
}

CLI::Validator finite_number(double low, double high, bool low_closed) {
    const std::string range = fmt::format("{}{}, {}]", low_closed ? "[" : "(", low, high);
    return CLI::Validator(
        [=](std::string &text) -> std::string {
            double x = 0;
            try {
                size_t used = 0;
                x = std::stod(text, &used);
                if (used != text.size()) return fmt::format("expected a number in {}, got \"{}\"", range, text);
            } catch (const std::exception &) {
                return fmt::format("expected a number in {}, got \"{}\"", range, text);
            }
            if (!std::isfinite(x) || x > high || x < low || (x == low && !low_closed))
                return fmt::format("expected a finite number in {}, got {}", range, text);
            return {};
        },
        "NUMBER in " + range);
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
