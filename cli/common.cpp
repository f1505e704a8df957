// Shared CLI helpers.
#include "common.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "backend/in_process_backend.hpp"
#include "backend/remote_backend.hpp"
#include "console.hpp"
#include "io/supervisor.hpp"
#include "store/layered_store.hpp"
#include "report/escape.hpp"

namespace attngate::cli {

namespace fs = std::filesystem;

namespace {
std::optional<fs::path> g_suite_dir;  // the configuration's `suites`
}  // namespace

void set_suite_dir(std::optional<fs::path> dir) { g_suite_dir = std::move(dir); }

Result<Suite> resolve_suite(const std::string &arg) {
    std::error_code ec;  // a symlink loop or an over-long name is "no such suite file", not an exception
    if (fs::exists(arg, ec) || arg.ends_with(".json") || arg.find('/') != std::string::npos) {
        if (!fs::exists(arg, ec)) return fail(ErrorKind::Usage, "--suite {}: no such suite file{}", arg, ec ? ": " + ec.message() : "");
        return load_suite(arg);
    }
    std::vector<fs::path> dirs;
    if (g_suite_dir) dirs.push_back(*g_suite_dir);
    dirs.push_back("suites");
    if (const auto data = installed_data_dir()) dirs.push_back(*data / "suites");
    std::string looked;
    for (const auto &dir : dirs) {
        const fs::path p = dir / (arg + ".json");
        if (fs::is_regular_file(p, ec)) return load_suite(p);
        looked += (looked.empty() ? "" : ", ") + fs::absolute(p, ec).lexically_normal().string();
    }
    return fail(ErrorKind::Usage, "--suite {}: no such suite file (looked for {})", arg, looked);
}

CLI::App *chosen_command(CLI::App &app) {
    CLI::App *at = &app;
    for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands()) at = subs.front();
    return at;
}

namespace {

/// The adapters' options; $ATTNGATE_ADAPTER_READY_TIMEOUT (seconds) replaces the 120 s a
/// started adapter has to listen: a JAX import on a loaded CI machine can take longer.
Result<RemoteOptions> remote_options() {
    RemoteOptions o;
    const char *v = std::getenv("ATTNGATE_ADAPTER_READY_TIMEOUT");
    if (!v || !*v) return o;
    char *end = nullptr;
    const double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(s) || s <= 0 || s > 86400)
        return fail(ErrorKind::Usage, "$ATTNGATE_ADAPTER_READY_TIMEOUT: expected seconds in (0, 86400], got \"{}\"", v);
    o.ready_timeout_s = s;
    return o;
}

}  // namespace

Result<Backends> open_backends(const KernelSources &sources, std::vector<std::string> *origins) {
    Backends backends;
    if (sources.builtins || !sources.plugins.empty()) {
        auto in_process = InProcessBackend::create(sources.plugins);
        if (!in_process) return std::unexpected(in_process.error());
        if (auto r = backends.add(std::move(*in_process)); !r) return std::unexpected(r.error());
    }
    if (origins) origins->insert(origins->end(), sources.plugins.begin(), sources.plugins.end());
    if (sources.adapters.empty() && sources.remotes.empty()) return backends;
    const auto remote_or = remote_options();
    if (!remote_or) return std::unexpected(remote_or.error());
    const RemoteOptions &remote = *remote_or;
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
    for (const auto &e : errors) print_stderr("error: {}\n", terminal_text(e));  // an adapter's words
    return errors.empty() || rc != kExitPass ? rc : kExitDrift;
}

int run_kernels_supervised(bool no_isolation, std::string_view what_stays, const std::function<int()> &body) {
    if (!no_isolation) return body();
    const SupervisedEnd end = run_supervised([&] { return with_stdout_checked(body()); });  // its stdout is the child's
    if (end.ended_early.empty()) return end.exit_code;
    print_stderr("error: the run did not finish: attngate's process {} (--no-isolation runs the kernels in it); {}\n",
               terminal_text(end.ended_early), what_stays);
    return kExitDrift;
}

namespace {
std::vector<FileSetValue> &file_set_values() {
    static std::vector<FileSetValue> values;
    return values;
}
}  // namespace

void set_file_set_values(std::vector<FileSetValue> values) { file_set_values() = std::move(values); }

int report_error(const Error &e) {
    std::string where;
    for (const auto &v : file_set_values())
        if (e.message.starts_with(v.flag + " " + v.value + ":")) where = fmt::format(" ({} {} is set at {})", v.flag, v.value, v.where);
    print_stderr("error: {}{}\n", terminal_text(e.message), terminal_text(where));  // messages quote files and adapters
    return exit_code_for(e.kind);
}

}  // namespace attngate::cli
