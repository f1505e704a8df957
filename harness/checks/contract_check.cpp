// Contract check verdicts.
#include "checks/contract_check.hpp"

#include <fmt/ranges.h>

namespace attngate {

CheckResult contract_check(const std::vector<std::string> &violations, const std::optional<Nondeterminism> &nd) {
    std::vector<std::string> breaches = violations;
    if (nd && nd->reads_output)
        breaches.push_back(fmt::format("reads its output before writing it: {} elements follow the output buffer's initial "
                                       "contents (poisoned with NaN payloads that change between calls)",
                                       nd->elements));
    CheckResult r{ContractMetrics{breaches}};
    if (breaches.empty()) {
        r.verdict = Verdict::Pass;
        r.reason = "inputs untouched, nothing written outside out or its ABI blocks, out written before it is read";
        return r;
    }
    r.verdict = Verdict::Fail;
    r.reason = fmt::format("{}", fmt::join(breaches, "; "));
    return r;
}

}  // namespace attngate
