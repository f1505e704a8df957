// Fuzz target: the suite reader (JSON syntax, fields, ranges, sizes).
#include "fuzz_target.hpp"
#include "plan/suite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto s = parse_suite(text, "suite.json");
    if (fuzz::accepted(s, "suite.json"))
        for (const auto &c : s->cases)  // an accepted case is one the planner can size
            if (c.estimated_bytes() <= 0 || c.estimated_bytes() > (s->memory_budget_mb << 20)) fuzz::broken("accepted case outside the budget", c.id);
    return 0;
}
