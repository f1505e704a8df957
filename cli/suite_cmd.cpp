// suite coverage: parse, ask the suite's kernels what they declare, compute the pair table,
// print it, exit 1 on a pair some kernel declares and none of its cases has.
#include <deque>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/error.hpp"
#include "plan/coverage.hpp"
#include "report/escape.hpp"

namespace attngate::cli {

namespace {

/// The lower triangle of the pair table: how many cases have both features; the diagonal
/// counts the cases with the feature, "-" marks a meaningless pair, "." one no kernel of the
/// suite asks for (none declares both), "MISS" one a kernel asks for and none of its cases has.
bool missing(const Coverage &cov, Feature a, Feature b) {
    return std::find(cov.missing.begin(), cov.missing.end(), std::pair{a, b}) != cov.missing.end();
}

std::string pair_table(const Coverage &cov) {
    constexpr int kWidth = 11;
    std::string s = fmt::format("{:<{}}", "", kWidth);
    for (Feature b : all_features()) s += fmt::format("{:>{}}", feature_name(b), kWidth);
    s += "\n";
    for (Feature a : all_features()) {
        s += fmt::format("{:<{}}", feature_name(a), kWidth);
        for (Feature b : all_features()) {
            const int n = cov.together[static_cast<size_t>(a)][static_cast<size_t>(b)];
            std::string cell;
            if (b > a) cell = "";
            else if (a != b && meaningless_pair(a, b)) cell = "-";
            else if (a != b && missing(cov, b, a)) cell = "MISS";
            else if (a != b && n == 0 && !cov.required[static_cast<size_t>(b)][static_cast<size_t>(a)]) cell = ".";
            else cell = std::to_string(n);
            s += fmt::format("{:>{}}", cell, kWidth);
        }
        s += "\n";
    }
    return s;
}

/// The kernels of the suite's plan as `run` with the same sources would make it: the ones
/// the suite names, and every kernel of a plugin or adapter it does not mention. A kernel the
/// suite names that no source offers counts as declaring every feature (`placeholders`).
Result<Plan> coverage_plan(const Suite &suite, const Backends &backends, const std::vector<std::string> &origins,
                           std::deque<KernelInfo> &placeholders) {
    std::vector<const KernelInfo *> available = backends.kernels();
    for (const auto &k : suite.kernels)
        if (!backends.find(k.kernel) && std::none_of(placeholders.begin(), placeholders.end(), [&](const KernelInfo &p) { return p.name == k.kernel; })) {
            KernelInfo &p = placeholders.emplace_back();
            p.name = k.kernel;
            p.features = ATTNGATE_FEATURE_ALL_PAGED;
            available.push_back(&p);
        }
    return make_plan(suite, available, origins);
}

/// One line per kernel: where it comes from, what it declares, how many pairs that asks for.
void say_kernels(const Coverage &cov, const Console &console) {
    for (const auto &k : cov.kernels) {
        if (k.origin.empty())
            console.say("kernel {}: not loaded (give its --plugin or --adapter): counted as declaring every feature\n",
                        terminal_text(k.kernel));
        else
            console.say("kernel {} ({}): declares {}\n", terminal_text(k.kernel), terminal_text(k.origin), feature_names(k.features));
        console.say("  runs {} cases; {} pairs of the features it declares, {} missing\n", k.cases, k.required, k.missing.size());
    }
}

/// "(for flash-decode, mine)": the kernels that miss the pair.
std::string missed_by(const Coverage &cov, Feature a, Feature b) {
    std::string who;
    for (const auto &k : cov.kernels)
        if (std::find(k.missing.begin(), k.missing.end(), std::pair{a, b}) != k.missing.end())
            who += fmt::format("{}{}", who.empty() ? "" : ", ", terminal_text(k.kernel));
    return who;
}

int coverage(const std::string &suite_arg, const KernelSources &sources, bool per_case, bool each_kernel, const Console &console) {
    auto suite = resolve_suite(suite_arg);
    if (!suite) return report_error(suite.error());
    std::vector<std::string> origins;
    auto backends = open_backends(sources, &origins);
    if (!backends) return report_error(backends.error());
    std::deque<KernelInfo> placeholders;
    auto plan = coverage_plan(*suite, *backends, origins, placeholders);
    if (!plan) return report_error(plan.error());
    const Coverage cov = suite_coverage(*suite, *plan);
    console.say("suite {} ({}): {} cases, {} features, {} meaningful pairs, {} of them declared by the suite's kernels\n",
                suite->name, suite->file.string(), suite->cases.size(), kFeatureCount, cov.meaningful_pairs(), cov.required_pairs());
    say_kernels(cov, console);
    console.say("\n{}", pair_table(cov));
    console.say("\ncells: cases with both features (diagonal: cases with the feature); features count only where they change\n"
                "the output (a causal mask on a one-row decode step masks nothing); sk%128: seq_k is not a multiple of the\n"
                "default 128-key block; '.': no kernel of the suite declares both features\n");
    for (Feature a : all_features())
        for (Feature b : all_features())
            if (a < b)
                if (const char *why = meaningless_pair(a, b)) console.say("meaningless: {} x {}: {}\n", feature_name(a), feature_name(b), why);
    if (per_case) {
        console.say("\n");
        for (const auto &[id, features] : cov.cases) {
            std::string names;
            for (Feature f : features) names += fmt::format("{}{}", names.empty() ? "" : " ", feature_name(f));
            console.say("{:<32} {}\n", id, names);
        }
    }
    const int rc = with_load_errors(*backends, kExitPass);
    const auto missing = each_kernel ? cov.missing_for_some_kernel() : cov.missing;
    std::string notes;
    if (!each_kernel)
        for (const auto &[a, b] : cov.missing_for_some_kernel())
            if (std::find(cov.missing.begin(), cov.missing.end(), std::pair{a, b}) == cov.missing.end())
                notes += fmt::format("note: {} x {}: another kernel runs a case with both, {} none (--each-kernel makes this fail)\n",
                                     feature_name(a), feature_name(b), missed_by(cov, a, b));
    if (!notes.empty()) console.say("\n{}", notes);
    if (missing.empty()) {
        console.say("\ncomplete: every meaningful pair of features the suite's kernels declare meets in a case {}\n",
                    each_kernel ? "each kernel that declares it runs" : "a kernel that declares it runs");
        return rc;
    }
    console.say("\nMISSING {} of {} declared pairs (no case {} has both):\n", missing.size(), cov.required_pairs(),
                each_kernel ? "that each kernel declaring them runs" : "that a kernel declaring them runs");
    for (const auto &[a, b] : missing) console.say("  {} x {}  (for {})\n", feature_name(a), feature_name(b), missed_by(cov, a, b));
    return kExitDrift;
}

}  // namespace

Command add_suite_coverage_command(CLI::App &app, Console &console) {
    struct Args {
        std::string suite;
        KernelSources sources;
        bool per_case = false;
        bool each_kernel = false;
    };
    auto a = std::make_shared<Args>();
    auto *suite = command_group(app, "suite", "inspect a suite");
    auto *cmd = suite->add_subcommand(
        "coverage",
        "the feature pairs the suite's cases exercise together; exit 1 when a pair that one of the suite's kernels declares is missing");
    cmd->add_option("suite,--suite", a->suite, "suite file or name in suites/ (default: attngate.toml's suite)")->required();
    add_kernel_source_options(cmd, a->sources);
    cmd->add_flag("--cases", a->per_case, "also list each case's features");
    cmd->add_flag("--each-kernel", a->each_kernel,
                  "every kernel must meet each pair it declares in a case it runs (default: one kernel that declares the pair)");
    return {cmd, [a, &console] { return coverage(a->suite, a->sources, a->per_case, a->each_kernel, console); }};
}

}  // namespace attngate::cli
