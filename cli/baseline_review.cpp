// The baseline review: table, questions, decisions.
#include "baseline_review.hpp"

#include <algorithm>
#include <iostream>
#include <variant>

#include <fmt/format.h>

namespace attngate::cli {

namespace {

std::string format_change(const UpdateRow &row) {
    if (!row.old_value) return "new";
    const auto pct = row.change_pct();
    return pct ? fmt::format("{:+.1f}%", *pct) : "n/a";
}

/// A numerics row keeps a sketch of the output, not a quantity: what moved is its bits.
std::string numerics_change(const NumericsBaseline &was, const NumericsBaseline &now) {
    if (was.elements != now.elements)
        return fmt::format("{} → {} elements", was.elements ? std::to_string(*was.elements) : "?", now.elements ? std::to_string(*now.elements) : "?");
    if (was.sha256 == now.sha256) return "same bits";
    if (was.sample_bits && now.sample_bits && was.sample_bits->size() == now.sample_bits->size() && !now.sample_bits->empty()) {
        size_t moved = 0;
        for (size_t i = 0; i < now.sample_bits->size(); ++i) moved += (*was.sample_bits)[i] != (*now.sample_bits)[i];
        return fmt::format("bits moved ({} of {} sampled)", moved, now.sample_bits->size());
    }
    return "bits moved";
}

/// What the review shows of a row: old, new and the change. Numbers for the checks that keep
/// one (seconds, bytes); for numerics the output's SHA-256 (its first 12 hex digits) and
/// what moved, never its element count as if it were the value.
struct Shown {
    std::string old_text, new_text, change;
};

Shown shown(const UpdateRow &row) {
    if (const auto *now = row.values ? std::get_if<NumericsBaseline>(&*row.values) : nullptr) {
        const auto *was = row.old_values ? std::get_if<NumericsBaseline>(&*row.old_values) : nullptr;
        const auto hash = [](const NumericsBaseline &n) { return n.sha256 ? n.sha256->substr(0, 12) : std::string("?"); };
        return {was ? hash(*was) : "-", hash(*now), was ? numerics_change(*was, *now) : "new"};
    }
    return {row.old_value ? fmt::format("{:.6g}", *row.old_value) : "-", fmt::format("{:.6g}", row.new_value), format_change(row)};
}

enum class Answer { Accept, Skip, AcceptRest, Quit, Closed };

/// What `q` does now, said in the prompt.
std::string quit_said(size_t accepted) {
    if (accepted == 0) return "[q]uit (nothing accepted yet: writes nothing)";
    return fmt::format("[q]uit (writes the {} accepted so far, skips the rest)", accepted);
}

Answer ask(const UpdateRow &row, size_t accepted) {
    for (;;) {
        write_stdout(fmt::format("accept {} ({})? [a]ccept, [s]kip, [A]ccept it and the rest, {}: ", row.label(), shown(row).change,
                                 quit_said(accepted)));
        std::string line;
        if (!std::getline(std::cin, line)) return Answer::Closed;
        if (line == "a" || line == "y") return Answer::Accept;
        if (line == "s" || line == "n") return Answer::Skip;
        if (line == "A") return Answer::AcceptRest;
        if (line == "q") return Answer::Quit;
    }
}

}  // namespace

void print_review_table(const std::string &check, const std::vector<UpdateRow> &rows, bool all, const Console &console) {
    const size_t changed = std::count_if(rows.begin(), rows.end(), [](const UpdateRow &r) { return r.changed; });
    const size_t unchanged = rows.size() - changed;
    console.say("{} baselines: {} of {} row(s) changed", check, changed, rows.size());
    if (unchanged == 0) console.say("\n");
    else if (all) console.say("; --all: reviewing the {} unchanged too\n", unchanged);
    else console.say(" ({} unchanged kept as stored; --all reviews them too)\n", unchanged);
    if (changed == 0 && !all) return;
    size_t width = 9;  // the change column: "+12.3%", or what moved in a numerics row
    for (const auto &row : rows)
        if (all || row.changed) width = std::max(width, shown(row).change.size());
    console.say("  {:<48} {:>14} {:>14} {:>{}}  {}\n", "case/kernel", "old", "new", "change", width, "verdict");
    for (const auto &row : rows)
        if (all || row.changed) {
            const Shown s = shown(row);
            console.say("  {:<48} {:>14} {:>14} {:>{}}  {}{}{}\n", row.label(), s.old_text, s.new_text, s.change, width, verdict_name(row.verdict),
                        row.changed ? "" : "  (unchanged)", row.refused.empty() ? "" : "  (refused)");
        }
}

Review review(const std::vector<UpdateRow> &rows, bool all, bool yes, bool force, const Console &console) {
    Review out;
    bool rest = yes;
    for (size_t i = 0; i < rows.size(); ++i) {
        const UpdateRow &row = rows[i];
        if (!all && !row.changed) continue;
        if (!row.refused.empty() && !force) {
            console.say("  refused {}: {} (use --force to accept anyway)\n", row.label(), row.refused);
            ++out.refused;
            continue;
        }
        if (!rest) {
            const Answer a = ask(row, out.accepted.size());
            if (a == Answer::Quit || a == Answer::Closed) {
                out.quit = a == Answer::Quit;
                out.closed = a == Answer::Closed;
                out.unanswered = static_cast<size_t>(std::count_if(rows.begin() + static_cast<long>(i), rows.end(),
                                                                   [&](const UpdateRow &r) { return all || r.changed; }));
                if (out.closed) out.accepted.clear();
                return out;
            }
            if (a == Answer::Skip) continue;
            rest = a == Answer::AcceptRest;
        }
        out.accepted.push_back(row);
    }
    return out;
}

}  // namespace attngate::cli
