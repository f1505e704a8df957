// `attngate bisect`: which package and release (two lock files), or which commit of a team's
// plugin (a git range), moved a row. The search itself is the Python driver in share/attngate/
// bisect (cli/bisect/ in a checkout), since it drives pip, venvs and git; attngate `ab` is its
// oracle, started as this same binary.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/files.hpp"
#include "io/process.hpp"
#include "options.hpp"
#include "store/layered_store.hpp"

namespace attngate::cli {

namespace {

namespace fs = std::filesystem;

struct BisectArgs {
    std::string suite, a_lock, b_lock, git, build, plugin, repo, checks = "golden,numerics,perf", out = "reports/bisect";
    std::string markdown, html, store, adapter, index_url, cache;
    std::vector<std::string> cases, kernels, find_links, extra;
    int max_envs = 0;
};

/// The driver: share/attngate/bisect of an installed attngate, else this checkout's cli/bisect.
Result<fs::path> driver_path() {
    std::error_code ec;
    if (const auto data = installed_data_dir(); data && fs::exists(*data / "bisect" / "bisect.py", ec)) return *data / "bisect" / "bisect.py";
    const fs::path source = fs::path(ATTNGATE_BISECT_SOURCE_DIR) / "bisect.py";
    if (fs::exists(source, ec)) return source;
    return fail(ErrorKind::Infra, "bisect: its driver is missing: neither share/attngate/bisect/bisect.py beside this attngate nor {}", source.string());
}

/// What the driver writes first (cli/bisect/bisect.py and report.py): how an earlier answer is known.
constexpr OutputMark kBisectJson{"{\n \"mode\": \"", "\"suite\": "};
constexpr OutputMark kBisectHtml{"<!doctype html><html><head><meta charset=\"utf-8\"><title>attngate bisect</title>", "<section class=\"bisect\">"};
constexpr OutputMark kBisectMarkdown{"### attngate bisect: ", " on "};

/// Checked before any environment is built: nothing the driver writes at the end replaces a file
/// that is not an earlier bisect's answer, and --out is a directory.
Result<void> replaceable_answers(const BisectArgs &a) {
    std::error_code ec;
    const auto status = fs::status(a.out, ec);  // "file/" and "file/sub" are ENOTDIR, not absent
    if ((!ec && fs::exists(status) && !fs::is_directory(status)) || ec == std::errc::not_a_directory)
        return fail(ErrorKind::Usage, "--out {}: not a directory (bisect writes bisect.json and bisect.html into it)", a.out);
    const std::string in_out = fmt::format("--out {}:", a.out);
    const std::tuple<std::string, fs::path, OutputMark> outputs[] = {{in_out, fs::path(a.out) / "bisect.json", kBisectJson},
                                                                     {in_out, fs::path(a.out) / "bisect.html", kBisectHtml},
                                                                     {"--markdown", a.markdown, kBisectMarkdown},
                                                                     {"--html", a.html, kBisectHtml}};
    for (const auto &[flag, path, mark] : outputs)
        if (!path.empty())
            if (auto ok = replaceable_output(flag, path, "an earlier `attngate bisect` answer", mark); !ok) return ok;
    return {};
}

/// The driver's command line, each option passed on only when given.
std::vector<std::string> driver_argv(const BisectArgs &a, const fs::path &driver) {
    const fs::path python = fs::exists("/usr/bin/python3") ? fs::path("/usr/bin/python3") : find_on_path("python3");
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<std::string> argv = {python.string(), driver.string(), "--attngate", self.string(), "--suite", a.suite,
                                     "--checks", a.checks, "--out", a.out, "--max-envs", std::to_string(a.max_envs)};
    const std::pair<const char *, const std::string *> single[] = {
        {"--a-lock", &a.a_lock}, {"--b-lock", &a.b_lock}, {"--git", &a.git},         {"--build", &a.build},
        {"--plugin", &a.plugin}, {"--repo", &a.repo},     {"--markdown", &a.markdown}, {"--html", &a.html},
        {"--store", &a.store},   {"--adapter", &a.adapter}, {"--index-url", &a.index_url}, {"--cache", &a.cache}};
    for (const auto &[flag, value] : single)
        if (!value->empty()) argv.insert(argv.end(), {flag, *value});
    const std::pair<const char *, const std::vector<std::string> *> many[] = {
        {"--case", &a.cases}, {"--kernel", &a.kernels}, {"--find-links", &a.find_links}, {"--with", &a.extra}};
    for (const auto &[flag, values] : many)
        for (const auto &v : *values) argv.insert(argv.end(), {flag, v});
    return argv;
}

int bisect(const BisectArgs &a) {
    auto driver = driver_path();
    if (!driver) return report_error(driver.error());
    if (auto ok = replaceable_answers(a); !ok) return report_error(ok.error());
    const auto argv = driver_argv(a, *driver);
    std::vector<char *> c_argv;
    for (const auto &s : argv) c_argv.push_back(const_cast<char *>(s.c_str()));
    c_argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return report_error(Error{ErrorKind::Infra, fmt::format("bisect: fork: {}", std::strerror(errno))});
    if (pid == 0) {
        ::execv(c_argv[0], c_argv.data());
        _exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return report_error(Error{ErrorKind::Infra, fmt::format("bisect: could not start {}", argv[0])});
    if (!WIFEXITED(status)) return kExitInfra;
    return WEXITSTATUS(status);
}

}  // namespace

Command add_bisect_command(CLI::App &app, Console &) {
    auto a = std::make_shared<BisectArgs>();
    auto *cmd = app.add_subcommand("bisect", "which package and release (two lock files), or which commit of your plugin (a git range), moved a row");
    add_suite_option(cmd, a->suite);
    cmd->add_option("--a-lock", a->a_lock, "the old lock file (every requirement pinned with ==)");
    cmd->add_option("--b-lock", a->b_lock, "the new lock file");
    cmd->add_option("--git", a->git, "A..B: bisect the commits of a plugin's repository (--repo) instead of packages");
    cmd->add_option("--build", a->build, "with --git: the shell command that builds the plugin in a checkout of each commit");
    cmd->add_option("--plugin", a->plugin, "with --git: the plugin .so the build leaves, relative to the checkout");
    cmd->add_option("--repo", a->repo, "with --git: the plugin's git repository (default: .)");
    cmd->add_option("--case", a->cases, "only this case (repeatable)");
    cmd->add_option("--kernel", a->kernels, "only this kernel (repeatable)");
    cmd->add_option("--checks", a->checks, "what may move a row: some of golden,numerics,perf,program")->capture_default_str();
    cmd->add_option("--max-envs", a->max_envs, "stop after this many environments or builds (0: no bound)")->check(CLI::Range(0, 100000));
    cmd->add_option("--out", a->out, "where bisect.json and bisect.html go")->capture_default_str();
    cmd->add_option("--markdown", a->markdown, "write the answer as Markdown (a PR comment) to this file");
    cmd->add_option("--html", a->html, "write the answer as an HTML page to this file");
    cmd->add_option("--store", a->store, "the store with the suite's goldens (passed to ab)");
    cmd->add_option("--adapter", a->adapter, "what each environment's python runs as the adapter (default: kernels/jax/adapter.py --interpret auto here, else -m attngate_jax)");
    cmd->add_option("--index-url", a->index_url, "the package index to install from and list releases of (default: pip's)");
    cmd->add_option("--find-links", a->find_links, "a directory or page of wheels for pip (repeatable)");
    cmd->add_option("--with", a->extra, "one more requirement every environment installs, e.g. the attngate-jax wheel (repeatable)");
    cmd->add_option("--cache", a->cache, "the venv cache (default ~/.cache/attngate/bisect)");
    return {cmd, [a] { return bisect(*a); }};
}

}  // namespace attngate::cli
