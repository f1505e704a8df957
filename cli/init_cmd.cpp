// `attngate init`: a team's repository made ready for the gate in one command. It asks the
// team's kernels what they declare and writes attngate.toml, a starter suite that covers
// every declared pair of features, the CI file, and baselines/; it never overwrites a file.
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "command.hpp"
#include "config_file.hpp"
#include "common.hpp"
#include "io/files.hpp"
#include "plan/starter_suite.hpp"
#include "report/escape.hpp"
#include "run/run.hpp"

namespace attngate::cli {

namespace {

namespace fs = std::filesystem;

struct InitArgs {
    KernelSources sources;
    std::string ci = "github";
    std::string dir = ".";
    std::string name;
    bool nested = false;  ///< set DIR up although an attngate.toml above it already governs it
};

/// One file (or directory) init makes, and what it says about it.
struct Output {
    fs::path path;     ///< relative to the repository
    std::string text;  ///< empty for a directory
    std::string what;  ///< said after "wrote PATH: "
};

/// "0.2.0": the version this binary is, for the CI file's `@v0.2.0`.
std::string version_number() {
    const std::string v = tool_version();
    return v.substr(v.rfind(' ') + 1);
}

/// `path` as the repository's files should name it: relative to `root` when it lies inside
/// it, else absolute.
std::string repo_path(const std::string &path, const fs::path &root) {
    const fs::path abs = absolute_path(path).lexically_normal();
    const fs::path rel = abs.lexically_relative(root);
    if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
    return abs.generic_string();
}

/// The suite's name: --name, else the repository directory's, in a suite name's alphabet.
std::string suite_name(const std::string &given, const fs::path &root) {
    if (!given.empty()) return given;
    std::string n = std::regex_replace(root.filename().string(), std::regex("[^A-Za-z0-9_.-]+"), "-");
    n.erase(0, n.find_first_not_of(".-"));
    return n.empty() ? std::string("team") : n;
}

/// A TOML value as toml++ writes it: strings double-quoted and escaped.
std::string toml_text(const toml::node &value) {
    std::ostringstream s;
    s << toml::toml_formatter(value, toml::format_flags::allow_unicode_strings);
    return s.str();
}

std::string toml_strings(const std::vector<std::string> &items) {
    toml::array a;
    for (const auto &i : items) a.push_back(i);
    return toml_text(a);
}

std::string config_text(const std::string &suite, const std::vector<std::string> &plugins, const InitArgs &a) {
    std::string s = fmt::format(
        "# attngate's settings for this repository (written by `attngate init`). Every attngate command run here\n"
        "# or below reads them; a flag on the command line overrides a key. `attngate config` prints each\n"
        "# effective setting and where it came from. Paths are relative to this file.\n\n"
        "# The suite that run, golden generate, ab and suite coverage use (--suite): a file, or a suite name.\n"
        "suite = {}\n\n",
        toml_text(toml::value<std::string>(suite)));
    s += "# Your kernels. plugins: shared libraries built against attngate's kernel_abi.h, loaded into\n"
         "# attngate's process (--plugin). adapters: commands that serve kernels over attngate's protocol,\n"
         "# such as `attngate-jax-adapter --kernels your_pkg.kernels:make` (--adapter).\n";
    s += fmt::format("{}plugins = {}\n", plugins.empty() ? "# " : "", toml_strings(plugins));
    s += fmt::format("{}adapters = {}\n", a.sources.adapters.empty() ? "# " : "", toml_strings(a.sources.adapters));
    if (!a.sources.remotes.empty()) s += fmt::format("# Adapters already serving at these URLs (--remote).\nremotes = {}\n", toml_strings(a.sources.remotes));
    s += "\n# Where goldens, baselines and history are kept (--store): a directory here, or the http(s) URL of a\n"
         "# shared store. Pricing and workloads this store lacks are read from attngate's installation.\n"
         "store = \"baselines\"\n\n"
         "# The reports `attngate run` writes besides its results (--html, --markdown, --junit).\n"
         "[report]\n"
         "html = \"reports/report.html\"\n"
         "markdown = \"reports/summary.md\"\n"
         "junit = \"reports/junit.xml\"\n";
    return s;
}

/// A YAML scalar: JSON's double-quoted string is one.
std::string yaml(const std::string &s) { return boost::json::serialize(boost::json::string(s)); }

/// A kernel source as the CI step builds it: the inputs it sets (build and plugin, or lock and
/// adapter), each a YAML value with its comment.
struct CiSource {
    std::string name;
    std::vector<std::pair<std::string, std::string>> inputs;
};

std::vector<CiSource> ci_sources(const std::vector<std::string> &plugins, const std::vector<std::string> &adapters) {
    std::vector<CiSource> out;
    for (const auto &p : plugins) {
        // A plugin outside the repository is not what its CI build makes: a guess to edit.
        const std::string built = p.starts_with("/") ? "build/" + fs::path(p).filename().string() : p;
        out.push_back({fs::path(p).filename().string(),
                       {{"build", yaml("cmake -S . -B build && cmake --build build") + "  # edit: the command that builds your plugin"},
                        {"plugin", yaml(built) + "  # edit: where that build puts it"}}});
    }
    for (const auto &a : adapters)
        out.push_back({a.substr(0, a.find(' ')),
                       {{"lock", yaml("requirements.lock") + "  # edit: the hashed lock file each side's venv is made from; pin attngate-jax in it as kernels/jax/README.md#installing-it says"},
                        {"adapter", yaml(a)}}});
    return out;
}

/// The inputs of one source and the suite, one per line at `indent`.
std::string ci_inputs(const CiSource &source, const std::string &suite, std::string_view indent) {
    std::string s;
    for (const auto &[key, value] : source.inputs) s += fmt::format("{}{}: {}\n", indent, key, value);
    return s + fmt::format("{}suite: {}\n", indent, yaml(suite));
}

std::string github_text(const std::vector<CiSource> &sources, const std::string &suite) {
    std::string s = fmt::format(
        "# attngate's gate (written by `attngate init`): on every pull request your kernels are built at its base\n"
        "# and at its head and compared by `attngate ab` on {}; drift fails the job, and the summary is\n"
        "# posted as one pull-request comment. The action's inputs: https://github.com/attngate/attngate (action.yml)\n"
        "name: attngate\n\n"
        "on:\n  pull_request:\n\n"
        "permissions: {{}}\n\n"
        "# A newer push to a pull request cancels the gate of the older one.\n"
        "concurrency:\n"
        "  group: attngate-${{{{ github.event.pull_request.number || github.ref }}}}\n"
        "  cancel-in-progress: true\n\n"
        "jobs:\n",
        suite);
    for (size_t n = 0; n < sources.size(); ++n)
        s += fmt::format(
            "  {}:\n"
            "    name: attngate ({})\n"
            "    runs-on: ubuntu-latest\n"
            "    container: debian:12  # zizmor: ignore[unpinned-images] the tag follows Debian 12's point and security releases; a digest would freeze them\n"
            "    permissions:\n"
            "      contents: read\n"
            "      pull-requests: write  # the summary comment, updated in place\n"
            "    steps:\n"
            "      - name: git, for the checkout of the base\n"
            "        run: apt-get update -qq && apt-get install -y -qq --no-install-recommends git ca-certificates\n"
            "      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683  # v4.2.2\n"
            "        with:\n"
            "          fetch-depth: 0  # the base commit is built too\n"
            "          persist-credentials: false\n"
            "      - uses: attngate/attngate@v{}  # zizmor: ignore[unpinned-uses] the release that wrote this file; pin its commit instead if your policy asks for hashes\n"
            "        with:\n"
            "{}",
            n == 0 ? "gate" : fmt::format("gate-{}", n + 1), sources[n].name, version_number(), ci_inputs(sources[n], suite, "          "));
    return s;
}

std::string gitlab_text(const std::vector<CiSource> &sources, const std::string &suite) {
    std::string s = fmt::format(
        "# attngate's gate (written by `attngate init`): on every merge request your kernels are built at its base\n"
        "# and at its head and compared by `attngate ab`; drift fails the pipeline. The component's inputs:\n"
        "# templates/gate/template.yml in attngate's repository (its spec: inputs:).\n"
        "include:\n"
        "  - component: $CI_SERVER_FQDN/attngate/attngate/gate@{}\n"
        "    inputs:\n"
        "{}",
        version_number(), ci_inputs(sources.front(), suite, "      "));
    if (sources.size() > 1)
        s += "# Your other kernel sources need a pipeline of their own: the component's jobs (attngate-gate, ...) have\n"
             "# fixed names, so a second include here would replace the first.\n";
    return s;
}

/// Why `path` cannot be written without overwriting something, or empty.
std::string occupied(const fs::path &path, bool directory) {
    std::error_code ec;
    const auto st = fs::symlink_status(path, ec);
    if (ec || st.type() == fs::file_type::not_found) return {};
    if (directory && st.type() == fs::file_type::directory) return "it exists; kept as it is";
    if (st.type() == fs::file_type::symlink) return "a symbolic link is there";
    if (directory) return "something that is not a directory is there";
    return "it exists (attngate init never overwrites a file; move it away to have it written)";
}

/// What to do after init: the first goldens and baselines, or, where the kept store already
/// holds goldens (a second init), the run and a review.
void say_next_steps(const Console &console, const fs::path &root, const std::string &suite_file) {
    std::error_code ec;
    const bool store_in_use = !fs::is_empty(root / "baselines" / "goldens", ec) && !ec;  // a second init: the goldens are made
    if (store_in_use)
        console.say("\nnext (baselines/ already holds goldens, kept as they are):\n"
                    "  attngate run               gate your kernels against them; a golden made before the suite changed\n"
                    "                             is stale (exit 2, naming `attngate golden generate`)\n"
                    "  attngate baseline update   review what the run changed, row by row\n"
                    "  `attngate suite coverage` shows the pairs of {}\n",
                    suite_file);
    else
        console.say("\nnext:\n"
                    "  attngate golden generate   the goldens of {} (the fp64 reference), into baselines/\n"
                    "  attngate run               gate your kernels on it: goldens, memory, perf, cost\n"
                    "  attngate baseline update --yes --reason \"first baselines\"\n"
                    "                             accept that run's output bits, times and memory peaks (a plugin's; an\n"
                    "                             adapter's kernels are gated on leaks only): numerics, perf and peaks are\n"
                    "                             gated from the next run on (before, they say \"no baseline\")\n"
                    "  then commit attngate.toml, suites/, baselines/ and the CI file (keep reports/ out of git);\n"
                    "  `attngate suite coverage` shows the pairs\n",
                    suite_file);
}

/// Writes a new file, failing rather than replacing one made since occupied() looked.
Result<void> write_new(const fs::path &path, const std::string &text) {
    if (auto ec = create_directories_0755(path.parent_path()); ec)
        return fail(ErrorKind::Infra, "{}: cannot create the directory: {}", path.parent_path().string(), ec.message());
    std::ofstream f(path, std::ios::out | std::ios::binary | std::ios::noreplace);
    if (!f) return fail(ErrorKind::Infra, "{}: cannot create the file (or it appeared meanwhile)", path.string());
    f << text;
    f.close();
    if (!f) return fail(ErrorKind::Infra, "{}: write failed", path.string());
    return {};
}

/// The team's kernels: every kernel the sources load, without attngate's built-in ones.
std::vector<const KernelInfo *> team_kernels(const Backends &backends) {
    std::vector<const KernelInfo *> out;
    for (const auto *k : backends.kernels())
        if (k->origin != "built-in") out.push_back(k);
    return out;
}

int init(InitArgs a, const Console &console) {
    std::error_code canon;  // through symbolic links: the directory commands run there find their attngate.toml from
    fs::path root = fs::weakly_canonical(absolute_path(a.dir), canon);
    if (canon) root = absolute_path(a.dir).lexically_normal();
    if (!root.has_filename()) root = root.parent_path();  // "/repo/." -> "/repo/" -> "/repo"
    if (std::error_code ec; !fs::is_directory(root, ec))
        return report_error({ErrorKind::Usage, fmt::format("--dir {}: {}", a.dir, fs::exists(root, ec) ? "not a directory" : "no such directory (attngate init sets up a repository that is there: make it first)")});
    // Under a set-up repository every command already reads its attngate.toml: a second set-up
    // here would take over the commands run below it, with a CI file where no CI looks.
    if (const auto above = find_config(root); above && above->parent_path() != root && !a.nested)
        return report_error({ErrorKind::Usage,
                             fmt::format("{} is inside the repository that {} sets up, and every command run here already reads that "
                                         "file: nothing written. Run attngate init in {} (it keeps what exists and adds what is "
                                         "missing), or give --nested to set {} up on its own",
                                         root.string(), above->string(), above->parent_path().string(), root.string())});
    if (a.sources.plugins.empty() && a.sources.adapters.empty() && a.sources.remotes.empty())
        return report_error({ErrorKind::Usage, "attngate init asks your kernels what they support: give --plugin SO or --adapter CMD"});
    std::vector<std::string> plugins;
    for (const auto &p : a.sources.plugins) plugins.push_back(repo_path(p, root));
    auto backends = open_backends(a.sources);
    if (!backends) return report_error(backends.error());
    if (const auto errors = backends->load_errors(); !errors.empty()) {
        for (const auto &e : errors) print_stderr("error: {}\n", terminal_text(e));  // an adapter's words
        return report_error({ErrorKind::BadInput, "some kernels did not load: nothing written"});
    }
    const auto kernels = team_kernels(*backends);
    if (kernels.empty()) return report_error({ErrorKind::BadInput, "the given plugins and adapters offer no kernel: nothing written"});
    const std::string name = suite_name(a.name, root);
    auto suite = starter_suite(name, kernels);
    if (!suite) return report_error(suite.error());
    const std::string suite_file = "suites/" + name + ".json";

    const auto &kc = suite->coverage.kernels;
    const bool same = std::all_of(kc.begin(), kc.end(), [&](const KernelCoverage &k) { return k.required == kc.front().required; });
    std::string covered;
    if (kc.size() == 1) covered = fmt::format("the {} pairs of features {} declares", kc.front().required, terminal_text(kc.front().kernel));
    else if (same) covered = fmt::format("the {} pairs of features each of the {} kernels declares", kc.front().required, kc.size());
    else
        for (const auto &k : kc) covered += fmt::format("{}{}'s {} pairs", covered.empty() ? "the pairs of features each kernel declares: " : ", ", terminal_text(k.kernel), k.required);
    std::vector<Output> outputs = {
        {"attngate.toml", config_text(suite_file, plugins, a), "the settings every command here reads"},
        {suite_file, suite->text, fmt::format("{} cases covering {}", suite->cases, covered)},
        {"baselines", "", "the store: goldens and baselines go here"},
        {".gitignore", "reports/\n", "the reports each run writes stay out of git"},
    };
    const auto sources = ci_sources(plugins, a.sources.adapters);  // a --remote is not built in CI
    if (a.ci != "none" && sources.empty())
        console.say("no CI file: a --remote adapter is not built in CI (give its --plugin or --adapter to have one written)\n");
    if (a.ci == "github" && !sources.empty())
        outputs.push_back({".github/workflows/attngate.yml", github_text(sources, suite_file), "the pull-request gate"});
    if (a.ci == "gitlab" && !sources.empty()) outputs.push_back({".gitlab-ci.yml", gitlab_text(sources, suite_file), "the merge-request gate"});

    console.say("attngate init in {}\n", terminal_text(root.string()));
    for (const auto *k : kernels)
        console.say("  kernel {} ({}): {}\n", terminal_text(k->name), terminal_text(k->origin), feature_names(k->features));
    bool kept_config = false;
    for (const auto &o : outputs) {
        const bool directory = o.text.empty();
        if (const std::string why = occupied(root / o.path, directory); !why.empty()) {
            console.say("skipped {}{}: {}\n", o.path.string(), directory ? "/" : "", why);
            kept_config |= o.path == "attngate.toml";
            continue;
        }
        if (directory) {
            if (auto ec = create_directories_0755(root / o.path); ec)
                return report_error({ErrorKind::Infra, fmt::format("{}: cannot create the directory: {}", (root / o.path).string(), ec.message())});
        } else if (auto w = write_new(root / o.path, o.text); !w) {
            return report_error(w.error());
        }
        console.say("{} {}{}: {}\n", directory ? "created" : "wrote", o.path.string(), directory ? "/" : "", o.what);
    }
    if (kept_config)
        console.say("attngate.toml was kept: check that its suite and kernels are the ones you mean (attngate config)\n");
    say_next_steps(console, root, suite_file);
    return kExitPass;
}

}  // namespace

Command add_init_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<InitArgs>();
    auto *cmd = app.add_subcommand(
        "init", "set up a repository for the gate: attngate.toml, a starter suite from your kernels' features, the CI file, baselines/");
    add_kernel_source_options(cmd, a->sources);
    cmd->add_option("--ci", a->ci, "the CI file to write: github (.github/workflows/attngate.yml), gitlab (.gitlab-ci.yml) or none")
        ->check(CLI::IsMember({"github", "gitlab", "none"}))
        ->capture_default_str();
    cmd->add_option("--dir", a->dir, "the repository to set up")->capture_default_str();
    cmd->add_flag("--nested", a->nested,
                  "set DIR up on its own although an attngate.toml above it already does (a monorepo's separate project): "
                  "its own attngate.toml then governs the commands run below it");
    cmd->add_option("--name", a->name, "the suite's name (default: the directory's), written to suites/NAME.json")
        ->check(CLI::Validator(
            [](std::string &s) { return std::regex_match(s, std::regex("[A-Za-z0-9_.-]+")) ? std::string() : std::string("expected letters, digits, '_', '.' or '-'"); },
            "NAME"));
    return {cmd, [a, &console] { return init(*a, console); }};
}

}  // namespace attngate::cli
