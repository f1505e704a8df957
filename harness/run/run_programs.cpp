// A run's program rows (run_programs.hpp).
#include "run/run_programs.hpp"

#include "checks/program_check.hpp"
#include "io/files.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// A part's text by hash: beside the results (this run's and the last run's), else in the store.
std::optional<std::string> program_text(const ProgramContext &ctx, const std::string &sha) {
    if (auto t = read_file(ctx.results_dir / "programs" / (sha + ".mlir"))) return std::move(*t);
    if (auto key = program_text_key(sha); key && ctx.store)
        if (auto got = ctx.store->get(*key); got && *got) return std::move((*got)->bytes);
    return std::nullopt;
}

/// Each part's text as programs/<sha>.mlir (identical texts are one file).
Result<void> keep_program_texts(const ProgramContext &ctx, const ProgramObservation &p) {
    for (const auto &part : p.parts) {
        const auto path = ctx.results_dir / "programs" / (part.sha256 + ".mlir");
        std::error_code ec;
        if (std::filesystem::exists(path, ec)) continue;
        if (auto w = write_file_atomic(path, part.text); !w) return w;
    }
    return {};
}

}  // namespace

CheckResult program_row_check(const ProgramContext &ctx, const std::string &case_id, const std::string &kernel, ProgramObservation &p) {
    if (auto kept = keep_program_texts(ctx, p); !kept) p.unavailable = kept.error().message;
    std::optional<ProgramReference> ref;
    if (ctx.baselines)
        if (const auto *stored = ctx.baselines->values_of<ProgramBaseline>(case_id, kernel))
            ref = program_reference(*stored, "the program baseline");
    if (!ref && ctx.previous)
        if (const CaseResult *last = ctx.previous->find(case_id, kernel))
            if (const auto *recorded = find_metrics<ProgramMetrics>(*last)) ref = program_reference(*recorded, "the last run");
    if (ref) ref->text_of = [&ctx](const std::string &sha) { return program_text(ctx, sha); };
    return program_check(p, ref, ctx.stable, "no program baseline yet (accept one: attngate baseline update --checks program)");
}

}  // namespace attngate
