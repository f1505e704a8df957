// Naming a paged kernel's stray reads from the trace of its NaN outputs.
#include "checks/paged_reads.hpp"

#include <fmt/format.h>

namespace attngate {

std::string paged_coords(const CaseSpec &c, int64_t index) {
    const int64_t d = index % c.head_dim_v, h = index / c.head_dim_v % c.heads_q, token = index / c.head_dim_v / c.heads_q;
    int64_t b = 0, first = 0;
    while (b + 1 < c.batch && first + c.paged->q_lens[static_cast<size_t>(b)] <= token) first += c.paged->q_lens[static_cast<size_t>(b++)];
    return fmt::format("sequence {}, query {}, head {}, element {}", b, token - first, h, d);
}

void attribute_unreadable(CheckResult &golden, const CaseSpec &c, const UnreadableReads &u) {
    if (!c.paged) return;
    if (auto *m = golden.get<GoldenMetrics>()) m->nan_read_past_kv_len = u.past_kv_len, m->nan_read_outside_table = u.outside_table;
    if (golden.verdict != Verdict::Fail) return;
    std::string why;
    const auto add = [&](int64_t count, int64_t first, const char *what, const char *slots) {
        if (count == 0) return;
        why += fmt::format("{}{} ({} NaN output(s) that {} cause, first at {})", why.empty() ? "" : "; it also ", what, count, slots,
                           paged_coords(c, first));
    };
    add(u.past_kv_len, u.first_past_kv_len, "read past kv_len", "the slots past kv_len");
    add(u.outside_table, u.first_outside_table, "read a page outside its table", "the pages no table holds");
    if (!why.empty()) golden.reason = fmt::format("{}: the kernel {}", golden.reason, why);
}

void name_paged_worst(CheckResult &golden, const CaseSpec &c) {
    auto *m = golden.get<GoldenMetrics>();
    if (!c.paged || !m || !m->worst_index || *m->worst_index < 0) return;
    const std::string where = paged_coords(c, *m->worst_index);
    if (golden.verdict == Verdict::Fail && m->worst_coords && golden.reason.find(*m->worst_coords) != std::string::npos)
        golden.reason += fmt::format("; {} is {}", *m->worst_coords, where);
    m->worst_coords = where;
}

}  // namespace attngate
