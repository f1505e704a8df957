// `attngate compare A.json B.json`: two results files' timings by the perf rule (B against A).
#include <fmt/format.h>

#include "checks/numerics_check.hpp"
#include "command.hpp"
#include "common.hpp"
#include "perf_table.hpp"
#include "results/compare.hpp"

namespace attngate::cli {

namespace {

struct CompareArgs {
    std::string a, b;
    DecisionPolicy policy;
    bool json = false;
};

int compare(const CompareArgs &args, const Console &console) {
    auto ra = load_results(args.a);
    if (!ra) return report_error(ra.error());
    auto rb = load_results(args.b);
    if (!rb) return report_error(rb.error());
    auto report = compare_results(*ra, *rb, args.policy);
    if (!report) return report_error(Error{report.error().kind, fmt::format("{} vs {}: {}", args.a, args.b, report.error().message)});
    std::vector<PerfRow> rows;
    for (const auto &r : report->rows) {
        const PerfDecision &d = r.decision;
        rows.push_back({r.case_id, r.kernel, perf_status_name(d.status), d.reason, d.ratio, d.ci_low, d.ci_high, d.p_adjusted});
    }
    const std::vector<CaseResult> numerics = compare_numerics(*ra, *rb);
    if (rows.empty() && numerics.empty() && report->did_not_load_b.empty() && report->b_complete)
        return report_error(Error{ErrorKind::BadInput, fmt::format("{} and {} share no timed or checked case x kernel", args.a, args.b)});
    const bool regression = report->regression();
    if (args.json) {
        console.data(pretty_json(json::object{{"a", args.a},
                                              {"b", args.b},
                                              {"regression", regression},
                                              {"perf", perf_json(rows)},
                                              {"numerics", numerics_json(numerics)},
                                              {"only_in_a", json::value_from(report->only_in_a)},
                                              {"did_not_load_in_b", json::value_from(report->did_not_load_b)},
                                              {"b_complete", report->b_complete}}));
    } else {
        if (!rows.empty()) console.say("{}", perf_table(rows));
        console.say("{}", numerics_table(numerics));
        for (const auto &e : report->did_not_load_b) console.say("{}in B: {}\n", kDidNotLoad, terminal_text(e));  // an adapter's words
        if (!report->only_in_a.empty())
            console.say("not compared: {} case x kernel(s) of A are not in B ({}{})\n", report->only_in_a.size(), report->only_in_a.front(),
                        report->only_in_a.size() > 1 ? ", ..." : "");
        std::string why = report->did_not_load_b.empty() ? "" : fmt::format(" ({} kernel source(s) of B did not load)", report->did_not_load_b.size());
        if (!report->b_complete) why += " (B's run did not complete: its results are partial)";
        console.say("\n{}: B ({}) against A ({}){}\n", regression ? "REGRESSION" : "no regression", args.b, args.a, why);
    }
    return regression ? kExitDrift : kExitPass;
}

}  // namespace

Command add_compare_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<CompareArgs>();
    auto *cmd = app.add_subcommand("compare", "compare the timings of two results files (B against A) with the perf rule");
    cmd->add_option("A", a->a, "reference results.json")->required();
    cmd->add_option("B", a->b, "current results.json")->required();
    add_policy_options(cmd, a->policy);
    cmd->add_flag("--json", a->json, "print the decisions as JSON: regression, perf rows, numerics rows");
    return {cmd, [a, &console] { return compare(*a, console); }};
}

}  // namespace attngate::cli
