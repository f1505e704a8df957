// suite coverage: parse, compute the pair table, print it, exit 1 on a missing pair.
#include "suite_cmd.hpp"

#include <memory>

#include <fmt/format.h>

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

int cmd_coverage(const std::string &suite_arg, bool per_case) {
    auto suite = resolve_suite(suite_arg);
    if (!suite) return report_error(suite.error());
    const Coverage cov = suite_coverage(*suite);
    fmt::print("suite {} ({}): {} cases, {} features, {} meaningful pairs\n\n", suite->name, suite->file.string(), suite->cases.size(),
               kFeatureCount, cov.meaningful_pairs());
    fmt::print("{}", pair_table(cov));
    fmt::print("\ncells: cases with both features (diagonal: cases with the feature); features count only where they change\n"
               "the output (a causal mask on a one-row decode step masks nothing); sk%128: seq_k is not a multiple of the\n"
               "default 128-key block\n");
    for (Feature a : all_features())
        for (Feature b : all_features())
            if (a < b)
                if (const char *why = meaningless_pair(a, b)) fmt::print("meaningless: {} x {}: {}\n", feature_name(a), feature_name(b), why);
    if (per_case) {
        fmt::print("\n");
        for (const auto &[id, features] : cov.cases) {
            std::string names;
            for (Feature f : features) names += fmt::format("{}{}", names.empty() ? "" : " ", feature_name(f));
            fmt::print("{:<32} {}\n", id, names);
        }
    }
    if (cov.missing.empty()) {
        fmt::print("\ncomplete: every meaningful pair of features meets in at least one case\n");
        return kExitPass;
    }
    fmt::print("\nMISSING {} of {} meaningful pairs (no case has both):\n", cov.missing.size(), cov.meaningful_pairs());
    for (const auto &[a, b] : cov.missing) fmt::print("  {} x {}\n", feature_name(a), feature_name(b));
    return kExitDrift;
}

}  // namespace

std::function<int()> add_suite_commands(CLI::App &app) {
    struct Args {
        std::string suite;
        bool per_case = false;
    };
    auto args = std::make_shared<Args>();
    auto *suite = app.add_subcommand("suite", "inspect a suite");
    suite->require_subcommand(1);
    auto *coverage = suite->add_subcommand(
        "coverage", "the feature pairs the suite's cases exercise together; exit 1 when a meaningful pair is missing");
    coverage->add_option("suite", args->suite, "suite file or name in suites/")->required();
    coverage->add_flag("--cases", args->per_case, "also list each case's features");
    return [=]() -> int { return *coverage ? cmd_coverage(args->suite, args->per_case) : -1; };
}

}  // namespace attngate::cli
