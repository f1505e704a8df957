// Fuzz target: the suite reader (JSON syntax, fields, ranges, sizes), and for an accepted
// paged case its page layout and the memory estimate against what its inputs hold.
#include <algorithm>

#include "fuzz_target.hpp"
#include "plan/inputs.hpp"
#include "plan/paged.hpp"
#include "plan/suite.hpp"

namespace {

/// Inputs of cases estimated below this are drawn and weighed: enough for the seeds' paged
/// cases and their mutations, small enough to keep thousands of inputs a second.
constexpr int64_t kDrawBelow = int64_t{16} << 20;

void check_paged(const attngate::Suite &s, const attngate::CaseSpec &c) {
    using namespace attngate;
    const PagedSpec &p = *c.paged;
    if (p.pages < p.pages_needed() || (p.pages == p.pages_needed() && p.has_padding())) fuzz::broken("accepted pool too small", c.id);
    if (c.estimated_bytes() >= kDrawBelow) return;
    const CaseInputs in = generate_inputs(s, c);
    if (in.page_table.size() != static_cast<size_t>(c.batch * p.pages_per_seq())) fuzz::broken("page table of the wrong size", c.id);
    if (std::any_of(in.page_table.begin(), in.page_table.end(), [&](int32_t page) { return page < 0 || page >= p.pages; }))
        fuzz::broken("page table entry outside the pool", c.id);
    const auto bytes = [](const auto &v) { return static_cast<int64_t>(v.size() * sizeof(v[0])); };
    const int64_t held = bytes(in.q) + bytes(in.k) + bytes(in.v) + bytes(in.q_bf16) + bytes(in.k_bf16) + bytes(in.v_bf16) +
                         bytes(in.page_table) + bytes(in.kv_lens) + bytes(in.cu_q_lens);
    if (4 * held > c.estimated_bytes()) fuzz::broken("the memory estimate leaves out what the inputs hold", c.id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto s = parse_suite(text, "suite.json");
    if (fuzz::accepted(s, "suite.json"))
        for (const auto &c : s->cases) {  // an accepted case is one the planner can size
            if (c.estimated_bytes() <= 0 || c.estimated_bytes() > (s->memory_budget_mb << 20)) fuzz::broken("accepted case outside the budget", c.id);
            if (c.paged) check_paged(*s, c);
        }
    return 0;
}
