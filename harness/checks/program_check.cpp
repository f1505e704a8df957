// The program check's comparison and the unified diff it shows.
#include "checks/program_check.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attngate {

namespace {

std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            if (start < text.size()) lines.push_back(text.substr(start));
            break;
        }
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return lines;
}

/// Past this many cells the LCS table is not built: the diff then lists both sides' sizes only.
constexpr size_t kMaxDiffCells = size_t{40} << 20;

}  // namespace

TextDiff unified_diff(const std::string &before, const std::string &after, const std::string &label) {
    const auto a = split_lines(before), b = split_lines(after);
    TextDiff d;
    // Common prefix and suffix first: a bump usually changes a few lines of a long body.
    size_t pre = 0;
    while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
    size_t suf = 0;
    while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
    const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
    if ((n + 1) * (m + 1) > kMaxDiffCells) {
        d.removed = static_cast<int64_t>(n), d.added = static_cast<int64_t>(m);
        d.unified = fmt::format("--- {0} (before)\n+++ {0} (after)\n@@ {1} lines replaced by {2}: too long to diff here @@\n", label, n, m);
        return d;
    }
    // LCS over the middle; ops: ' ' keep, '-' remove, '+' add, in order.
    std::vector<std::vector<uint32_t>> L(n + 1, std::vector<uint32_t>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            L[i][j] = a[pre + i] == b[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    struct Op { char kind; size_t ai, bi; };
    std::vector<Op> ops;
    for (size_t k = 0; k < pre; ++k) ops.push_back({' ', k, k});
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && a[pre + i] == b[pre + j]) ops.push_back({' ', pre + i++, pre + j++});
        else if (j < m && (i == n || L[i][j + 1] > L[i + 1][j])) ops.push_back({'+', pre + i, pre + j++}), ++d.added;
        else ops.push_back({'-', pre + i++, pre + j}), ++d.removed;
    }
    for (size_t k = 0; k < suf; ++k) ops.push_back({' ', pre + n + k, pre + m + k});
    // Hunks: changes with 3 lines of context, merged where the context touches.
    constexpr size_t ctx = 3;
    std::string out = fmt::format("--- {0} (before)\n+++ {0} (after)\n", label);
    size_t k = 0;
    while (k < ops.size()) {
        while (k < ops.size() && ops[k].kind == ' ') ++k;
        if (k == ops.size()) break;
        size_t start = k >= ctx ? k - ctx : 0, end = k;
        while (end < ops.size()) {
            size_t run = end;
            while (run < ops.size() && ops[run].kind == ' ') ++run;
            if (run == ops.size() || run - end > 2 * ctx) {
                end = std::min(ops.size(), end + ctx);
                break;
            }
            end = run;
            while (end < ops.size() && ops[end].kind != ' ') ++end;
        }
        size_t a0 = ops[start].ai, b0 = ops[start].bi, na = 0, nb = 0;
        std::string body;
        for (size_t q = start; q < end; ++q) {
            const Op &o = ops[q];
            if (o.kind != '+') ++na;
            if (o.kind != '-') ++nb;
            body += o.kind;
            body += o.kind == '+' ? b[o.bi] : a[o.ai];
            body += '\n';
        }
        out += fmt::format("@@ -{},{} +{},{} @@\n", a0 + 1, na, b0 + 1, nb) + body;
        k = end;
    }
    d.unified = std::move(out);
    return d;
}

CheckResult program_check(const ProgramObservation &now, const std::optional<ProgramReference> &ref, bool stable,
                          const std::string &no_reference_why) {
    if (!now.unavailable.empty()) return CheckResult(CheckName::Program, Verdict::Skip, now.unavailable);
    ProgramMetrics m;
    m.target = now.target;
    m.part_names.emplace(), m.part_sha256.emplace(), m.part_lines.emplace();
    for (const auto &p : now.parts) {
        m.part_names->push_back(p.label());
        m.part_sha256->push_back(p.sha256);
        m.part_lines->push_back(p.lines);
    }
    m.lower_s = now.seconds;
    m.stable_required = stable;
    if (!ref) {
        m.status = ProgramStatus::NoReference;
        return CheckResult(std::move(m), Verdict::Pass, no_reference_why);
    }
    m.against = ref->against;
    // Parts pair by label, else in order within their kind: jax 0.7 names every Mosaic body
    // "main", 0.10 by its kernel, and a rename alone is no reason to show the whole body.
    std::vector<std::pair<std::string, std::string>> before;  // (label, sha) not yet paired
    for (size_t i = 0; i < ref->labels.size(); ++i) before.emplace_back(ref->labels[i], ref->sha256[i]);
    const auto take = [&](const ProgramPart &p) -> std::optional<std::pair<std::string, std::string>> {
        auto it = std::find_if(before.begin(), before.end(), [&](const auto &b) { return b.first == p.label(); });
        if (it == before.end())
            it = std::find_if(before.begin(), before.end(), [&](const auto &b) { return b.first.starts_with(p.kind); });
        if (it == before.end()) return std::nullopt;
        auto out = *it;
        before.erase(it);
        return out;
    };
    std::vector<std::string> changed;
    std::string diff;
    int64_t added = 0, removed = 0;
    const auto show = [&](const std::string &label, const std::optional<std::string> &old_text, const std::string &new_text) {
        const TextDiff d = unified_diff(old_text.value_or(""), new_text, label);
        added += d.added, removed += d.removed;
        diff += d.unified;
    };
    for (const auto &p : now.parts) {
        const auto old = take(p);
        if (old && old->second == p.sha256) continue;
        const std::string label = old && old->first != p.label() ? old->first + " -> " + p.label() : p.label();
        changed.push_back(label);
        const auto old_text = !old ? std::optional<std::string>("") : ref->text_of ? ref->text_of(old->second) : std::nullopt;
        if (!old_text) diff += fmt::format("--- {0} (before: {1}, text not kept)\n+++ {0} (after)\n", label, old->second);
        else show(label, old_text, p.text);
    }
    for (const auto &[label, sha] : before) {  // parts that are gone
        changed.push_back(label);
        show(label, ref->text_of ? ref->text_of(sha) : std::nullopt, "");
    }
    if (changed.empty()) {
        m.status = ProgramStatus::Identical;
        return CheckResult(std::move(m), Verdict::Pass, "TPU program identical to " + ref->against);
    }
    m.status = ProgramStatus::Changed;
    m.changed_parts = changed;
    m.lines_added = added, m.lines_removed = removed;
    // Cut at kProgramDiffLines so one kernel's rewrite does not swell results.json.
    size_t pos = 0;
    for (int64_t line = 0; line < kProgramDiffLines && pos != std::string::npos; ++line) {
        pos = diff.find('\n', pos);
        if (pos != std::string::npos) ++pos;
    }
    if (pos != std::string::npos && pos < diff.size())
        diff = diff.substr(0, pos) + fmt::format("... (cut at {} lines)\n", kProgramDiffLines);
    m.diff = std::move(diff);
    std::string reason = fmt::format("TPU program changed against {}: {} (+{} -{} lines)", ref->against, fmt::join(changed, ", "), added, removed);
    if (stable) reason += " (the suite asks for stable programs)";
    return CheckResult(std::move(m), stable ? Verdict::Fail : Verdict::Pass, reason);
}

}  // namespace attngate
