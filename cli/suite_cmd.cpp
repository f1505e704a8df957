// suite coverage: parse, compute the pair table, print it, exit 1 on a missing pair.
#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/error.hpp"
#include "plan/coverage.hpp"

namespace attngate::cli {

namespace {

/// The lower triangle of the pair table: how many cases have both features; the diagonal
/// counts the cases with the feature, "-" marks a meaningless pair, "MISS" a missing one.
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
            else if (n == 0 && a != b) cell = "MISS";
            else cell = std::to_string(n);
            s += fmt::format("{:>{}}", cell, kWidth);
        }
        s += "\n";
    }
    return s;
}

int coverage(const std::string &suite_arg, bool per_case, const Console &console) {
    auto suite = resolve_suite(suite_arg);
    if (!suite) return report_error(suite.error());
    const Coverage cov = suite_coverage(*suite);
    console.say("suite {} ({}): {} cases, {} features, {} meaningful pairs\n\n", suite->name, suite->file.string(), suite->cases.size(),
               kFeatureCount, cov.meaningful_pairs());
    console.say("{}", pair_table(cov));
    console.say("\ncells: cases with both features (diagonal: cases with the feature); features count only where they change\n"
               "the output (a causal mask on a one-row decode step masks nothing); sk%128: seq_k is not a multiple of the\n"
               "default 128-key block\n");
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
    if (cov.missing.empty()) {
        console.say("\ncomplete: every meaningful pair of features meets in at least one case\n");
        return kExitPass;
    }
    console.say("\nMISSING {} of {} meaningful pairs (no case has both):\n", cov.missing.size(), cov.meaningful_pairs());
    for (const auto &[a, b] : cov.missing) console.say("  {} x {}\n", feature_name(a), feature_name(b));
    return kExitDrift;
}

}  // namespace

Command add_suite_coverage_command(CLI::App &app, Console &console) {
    struct Args {
        std::string suite;
        bool per_case = false;
    };
    auto a = std::make_shared<Args>();
    auto *suite = command_group(app, "suite", "inspect a suite");
    auto *cmd = suite->add_subcommand(
        "coverage", "the feature pairs the suite's cases exercise together; exit 1 when a meaningful pair is missing");
    cmd->add_option("suite", a->suite, "suite file or name in suites/")->required();
    cmd->add_flag("--cases", a->per_case, "also list each case's features");
    return {cmd, [a, &console] { return coverage(a->suite, a->per_case, console); }};
}

}  // namespace attngate::cli
