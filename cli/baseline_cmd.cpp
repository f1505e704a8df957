// The interactive baseline update: table, questions, atomic write.
#include "baseline_cmd.hpp"

#include <cstdlib>
#include <iostream>

#include <fmt/format.h>
#include <unistd.h>

#include "store/baseline_update.hpp"
#include "store/keys.hpp"

namespace attngate::cli {

namespace {

std::string format_change(const UpdateRow &row) {
    if (!row.old_value) return "new";
    const auto pct = row.change_pct();
    return pct ? fmt::format("{:+.1f}%", *pct) : "n/a";
}

void print_table(const std::string &check, const std::vector<UpdateRow> &rows) {
    fmt::print("{} baselines: {} case x kernel row(s)\n", check, rows.size());
    fmt::print("  {:<48} {:>14} {:>14} {:>9}  {}\n", "case/kernel", "old", "new", "change", "verdict");
    for (const auto &row : rows)
        fmt::print("  {:<48} {:>14} {:>14.6g} {:>9}  {}{}\n", row.label(), row.old_value ? fmt::format("{:.6g}", *row.old_value) : "-",
                   row.new_value, format_change(row), verdict_name(row.verdict),
                   row.golden_failed ? "  (golden check failed)" : "");
}

enum class Answer { Accept, Skip, AcceptAll, Quit };

Answer ask(const UpdateRow &row) {
    for (;;) {
        fmt::print("accept {} ({})? [a]ccept, [s]kip, accept [A]ll, [q]uit: ", row.label(), format_change(row));
        std::fflush(stdout);
        std::string line;
        if (!std::getline(std::cin, line)) return Answer::Quit;
        if (line == "a" || line == "y") return Answer::Accept;
        if (line == "s" || line == "n") return Answer::Skip;
        if (line == "A") return Answer::AcceptAll;
        if (line == "q") return Answer::Quit;
    }
}

/// Chooses the rows to write, asking on a terminal; nullopt when the user quit.
std::optional<std::vector<UpdateRow>> choose(const std::vector<UpdateRow> &rows, bool yes, bool force) {
    std::vector<UpdateRow> accepted;
    bool all = yes;
    for (const auto &row : rows) {
        if (row.golden_failed && !force) {
            fmt::print("  refused {}: its golden check failed (use --force to accept anyway)\n", row.label());
            continue;
        }
        if (!all) {
            const Answer a = ask(row);
            if (a == Answer::Quit) return std::nullopt;
            if (a == Answer::Skip) continue;
            all = a == Answer::AcceptAll;
        }
        accepted.push_back(row);
    }
    return accepted;
}

}  // namespace

int baseline_update(const BaselineUpdateArgs &a, const RunResults &results) {
    if (const char *ci = std::getenv("CI"); ci && std::string(ci) == "true" && !a.allow_in_ci) {
        fmt::print(stderr, "error: refusing to write baselines in CI (CI=true): accept them on a developer machine, "
                           "or pass --allow-in-ci\n");
        return 2;
    }
    if (!a.yes && !::isatty(STDIN_FILENO)) {
        fmt::print(stderr, "error: stdin is not a terminal, so nobody can answer; pass --yes to accept every row\n");
        return 2;
    }
    std::vector<const BaselineKind *> kinds;
    for (const auto &check : a.checks) {
        const BaselineKind *k = find_baseline_kind(check);
        if (!k) {
            fmt::print(stderr, "error: --checks {}: no baselines for that check (have: memory, perf, compile, numerics, instructions)\n", check);
            return 2;
        }
        kinds.push_back(k);
    }
    const auto ran = [&](CheckName check) {  // some case x kernel carries this check
        return std::any_of(results.results.begin(), results.results.end(), [&](const CaseResult &r) {
            return std::any_of(r.checks.begin(), r.checks.end(), [&](const CheckResult &c) { return c.check() == check; });
        });
    };
    if (kinds.empty())
        for (const auto &k : baseline_kinds())
            if (ran(k.check)) kinds.push_back(&k);
    if (kinds.empty()) {
        fmt::print(stderr, "error: {}: the results hold no check with baselines (run with --checks memory or perf)\n", a.results_path);
        return 2;
    }
    const std::string machine = machine_class(a.machine);
    auto store = open_store(a.store);
    if (!store) return report_error(store.error());
    for (const BaselineKind *kind : kinds) {
        auto key = baseline_key(kind->name(), results.suite, kind->per_machine ? machine : "");
        if (!key) return report_error(key.error());
        const std::string path = (*store)->where(*key);
        auto existing = load_baseline_file(**store, *key);
        if (!existing) return report_error(existing.error());
        const BaselineFile file = existing->value_or(BaselineFile{kind->check, results.suite, kind->per_machine ? machine : "", {}, ""});
        const auto rows = plan_update(results, *kind, *existing ? &**existing : nullptr, a.only);
        print_table(kind->name(), rows);
        const auto accepted = choose(rows, a.yes, a.force);
        if (!accepted) {
            fmt::print("quit: nothing written for {}\n", kind->name());
            return 0;
        }
        if (accepted->empty()) {
            fmt::print("nothing accepted for {}\n", kind->name());
            continue;
        }
        if (auto w = apply_update(**store, *key, file, *accepted, make_provenance(a.reason, machine, results.fingerprint.empty() ? json::object{{"tool", results.tool_version}} : results.fingerprint));
            !w) {
            if (w.error().kind != ErrorKind::Conflict) return report_error(w.error());
            // Someone else wrote these baselines while this update was reviewed: say what
            // they changed and write nothing, so neither update is lost.
            auto now = load_baseline_file(**store, *key);
            fmt::print(stderr, "error: {}\nerror: nothing was written for {}; what the other update changed:\n", w.error().message, kind->name());
            if (now)
                for (const auto &line : describe_baseline_changes(*existing, *now)) fmt::print(stderr, "  {}\n", line);
            fmt::print(stderr, "re-run `attngate baseline update` to review your rows against the new baselines\n");
            return kExitInfra;
        }
        fmt::print("wrote {} {} baseline(s) to {}\n", accepted->size(), kind->name(), path);
    }
    return 0;
}

}  // namespace attngate::cli
