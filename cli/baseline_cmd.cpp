// `attngate baseline update`: review a run's changed rows and write the accepted baselines
// atomically, on a developer's machine.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "backend/in_process_backend.hpp"
#include "baseline_review.hpp"
#include "command.hpp"
#include "common.hpp"
#include "store/history.hpp"
#include "store/keys.hpp"

namespace attngate::cli {

namespace {

struct BaselineUpdateArgs {
    std::string results_path = "reports/results.json";
    StoreArgs store;
    std::vector<std::string> checks;  ///< empty: every check with baselines found in the results
    std::string only, reason, machine;
    bool yes = false, all = false, force = false, allow_in_ci = false;
};

/// The baseline kinds to review: those named by --checks, else every one the results ran.
Result<std::vector<const BaselineKind *>> kinds_to_review(const BaselineUpdateArgs &a, const RunResults &results) {
    std::vector<const BaselineKind *> kinds;
    for (const auto &check : a.checks) {
        const BaselineKind *k = find_baseline_kind(check);
        if (!k) return fail(ErrorKind::Usage, "--checks {}: no baselines for that check (have: memory, perf, compile, numerics, instructions, program)", check);
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
    if (kinds.empty())
        return fail(ErrorKind::BadInput, "{}: the results hold no check with baselines (run with --checks memory or perf)", a.results_path);
    return kinds;
}

/// Someone else wrote these baselines while this update was reviewed: says what they
/// changed; nothing is written, so neither update is lost.
int conflict(const Error &e, Store &store, const std::string &key, const std::optional<BaselineFile> &read, const std::string &check) {
    auto now = load_baseline_file(store, key);
    print_stderr("error: {}\nerror: nothing was written for {}; what the other update changed:\n", e.message, check);
    if (now)
        for (const auto &line : describe_baseline_changes(read, *now)) print_stderr("  {}\n", line);
    print_stderr("re-run `attngate baseline update` to review your rows against the new baselines\n");
    return kExitInfra;
}

/// The accepted perf rows join their windows of past runs in the store's history
/// (perf_windows.hpp); a row whose level moved starts its window again.
int add_to_windows(const RunResults &results, const std::vector<UpdateRow> &accepted, Store &store, const Console &console) {
    std::set<std::string> labels;
    for (const auto &row : accepted) labels.insert(row.label());
    auto key = append_perf_window(store, results, labels);
    if (!key) return report_error(key.error());
    if (!key->empty()) console.say("perf windows: recorded this run's accepted rows as {}\n", store.where(*key));
    return kExitPass;
}

/// The accepted program baselines' texts, from programs/ beside the results into the store
/// (programs/<sha>.mlir, once per content); a text already stored is not written again.
int store_program_texts(const BaselineUpdateArgs &a, const std::vector<UpdateRow> &accepted, Store &store, const Console &console) {
    const auto dir = std::filesystem::absolute(a.results_path).parent_path() / "programs";
    size_t written = 0;
    for (const auto &row : accepted) {
        const auto *kept = row.values ? std::get_if<ProgramBaseline>(&*row.values) : nullptr;
        if (!kept || !kept->part_sha256) continue;
        for (const auto &sha : *kept->part_sha256) {
            auto key = program_text_key(sha);
            if (!key) return report_error(key.error());
            auto have = store.get(*key);
            if (!have) return report_error(have.error());
            if (*have) continue;
            auto text = read_file(dir / (sha + ".mlir"));
            if (!text) return report_error(text.error());
            if (auto w = store.put(*key, *text, {}); !w) return report_error(w.error());
            ++written;
        }
    }
    console.say("programs: stored {} new program text(s) under {}\n", written, store.where("programs/"));
    return kExitPass;
}

/// The diffs of the changed programs, so that a reviewer sees what they accept.
void print_program_diffs(const RunResults &results, const Console &console) {
    for (const auto &r : results.results)
        for (const auto &c : r.checks)
            if (const auto *m = c.get<ProgramMetrics>(); m && m->diff && !m->diff->empty())
                console.say("\n{}/{}: {}\n{}", r.case_id, r.kernel, c.reason, *m->diff);
}

/// Reviews and writes one check's baselines; sets `stop` when the review ended the update and
/// adds the rows it refused to `refused`.
int update_kind(const BaselineUpdateArgs &a, const RunResults &results, const BaselineKind &kind, Store &store, const Console &console,
                bool &stop, size_t &refused) {
    // Numerics baselines are kept per the path the run's kernels took (results written before
    // 0.2.0 do not say it: their machine class); the others per this machine.
    // Perf and compile baselines per the class the run was timed on (its results say which).
    const std::string machine = kind.check == CheckName::Numerics && !results.numerics_class.empty() ? results.numerics_class
                                : !results.machine_class.empty() && a.machine.empty()       ? results.machine_class
                                                                                           : machine_class(a.machine, builtin_numerics_path());
    auto key = baseline_key(kind.check, results.suite, kind.per_machine ? machine : "");
    if (!key) return report_error(key.error());
    auto existing = load_baseline_file(store, *key);
    if (!existing) return report_error(existing.error());
    const BaselineFile file = existing->value_or(BaselineFile{kind.check, results.suite, kind.per_machine ? machine : "", {}, ""});
    const auto rows = plan_update(results, kind, *existing ? &**existing : nullptr, a.only);
    if (kind.check == CheckName::Program) print_program_diffs(results, console);
    print_review_table(kind.name(), rows, a.all, console);
    const Review decided = review(rows, a.all, a.yes, a.force, console);
    stop = decided.quit || decided.closed;
    refused += decided.refused;
    if (decided.closed) {
        console.say("\nstdin closed: nothing written for {}\n", kind.name());
        return kExitPass;
    }
    if (decided.accepted.empty()) {
        console.say("{}nothing accepted for {}{}\n", decided.quit ? "quit: " : "", kind.name(),
                    decided.quit ? fmt::format("; {} row(s) not reviewed", decided.unanswered) : "");
        return kExitPass;
    }
    const json::object fingerprint = results.fingerprint.empty() ? json::object{{"tool", results.tool_version}} : results.fingerprint;
    if (auto w = apply_update(store, *key, file, decided.accepted, make_provenance(a.reason, machine, fingerprint)); !w) {
        if (w.error().kind != ErrorKind::Conflict) return report_error(w.error());
        return conflict(w.error(), store, *key, *existing, kind.name());
    }
    console.say("{}wrote {} {} baseline(s) to {}{}\n", decided.quit ? "quit: " : "", decided.accepted.size(), kind.name(), store.where(*key),
                decided.quit ? fmt::format("; {} row(s) not reviewed", decided.unanswered) : "");
    if (kind.check == CheckName::Perf) return add_to_windows(results, decided.accepted, store, console);
    if (kind.check == CheckName::Program) return store_program_texts(a, decided.accepted, store, console);
    return kExitPass;
}

/// Whether this runs in CI: $CI set to anything but empty, "0" or "false" (GitHub and GitLab set
/// "true", others "1" or "yes"), as CI-detection libraries read it.
bool in_ci() {
    const char *ci = std::getenv("CI");
    if (!ci || !*ci) return false;
    std::string v = ci;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return v != "0" && v != "false";
}

int update(const BaselineUpdateArgs &a, const Console &console) {
    auto results = load_results(a.results_path);
    if (!results && !std::filesystem::exists(a.results_path))  // nothing to review yet
        return report_error(Error{ErrorKind::Usage, fmt::format("{}: no results to review: run attngate run first (or give --results "
                                                                "the results.json of a run)", a.results_path)});
    if (!results) return report_error(results.error());
    if (!results->complete)
        return report_error(Error{ErrorKind::BadInput, fmt::format("{}: $.complete: the run did not finish; rerun it first", a.results_path)});
    if (in_ci() && !a.allow_in_ci)
        return report_error(Error{ErrorKind::Usage, fmt::format("refusing to write baselines in CI (CI={}): accept them on a developer "
                                                                "machine, or pass --allow-in-ci", std::getenv("CI"))});
    if (!a.yes && !::isatty(STDIN_FILENO))
        return report_error(Error{ErrorKind::Usage, "stdin is not a terminal, so nobody can answer; pass --yes to accept every changed row"});
    auto kinds = kinds_to_review(a, *results);
    if (!kinds) return report_error(kinds.error());
    auto store = open_store(a.store, StoreUse::Create);
    if (!store) return report_error(store.error());
    size_t refused = 0;
    for (size_t i = 0; i < kinds->size(); ++i) {
        bool stop = false;
        if (const int rc = update_kind(a, *results, *(*kinds)[i], **store, console, stop, refused); rc != kExitPass) return rc;
        if (stop && i + 1 < kinds->size()) console.say("not reviewed: the {} other check(s)' baselines\n", kinds->size() - i - 1);
        if (stop) break;
    }
    if (refused == 0) return kExitPass;
    // A refused row is a wrong output or a leak, not a baseline to accept: the update did not do what was asked.
    print_stderr("error: {} row(s) refused (case × kernel × check): a failed golden check or a leak is not a baseline to accept, so "
                 "those baselines were not written; fix the kernel, or pass --force to accept them anyway\n", refused);
    return kExitDrift;
}

}  // namespace

Command add_baseline_update_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<BaselineUpdateArgs>();
    auto *baseline = command_group(app, "baseline", "review and accept baselines on your own machine");
    auto *cmd = baseline->add_subcommand("update", "show the rows that changed, old -> new, and write the accepted baselines");
    cmd->add_option("--results", a->results_path, "results.json of the run to accept")->capture_default_str();
    add_store_options(cmd, a->store);
    cmd->add_option("--checks", a->checks, "which baselines (memory); default: all in the results")->delimiter(',');
    cmd->add_option("--only", a->only, "only case/kernel labels matching this glob");
    cmd->add_option("--reason", a->reason, "why, stored with the provenance");
    cmd->add_option("--machine", a->machine, "a name for this machine class")->check(non_empty_name());
    cmd->add_flag("--yes", a->yes, "accept every row to review without asking");
    cmd->add_flag("--all", a->all, "review the unchanged rows too (e.g. to record fresh perf samples)");
    cmd->add_flag("--force", a->force, "accept rows whose golden check failed");
    cmd->add_flag("--allow-in-ci", a->allow_in_ci, "write even when CI=true");
    return {cmd, [a, &console] { return update(*a, console); }};
}

}  // namespace attngate::cli
