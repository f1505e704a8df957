// Contract check verdicts.
#include "checks/contract_check.hpp"

#include <fmt/ranges.h>

#include <algorithm>

namespace attngate {

CheckResult contract_check(const std::vector<std::string> &violations, const std::optional<Nondeterminism> &nd) {
    std::vector<std::string> breaches = violations;
    if (nd && nd->reads_output)
        breaches.push_back(fmt::format("leaves {} output element(s) unwritten, or reads them before writing them: they follow the "
                                       "output buffer's initial contents (poisoned with NaN payloads that change between calls; "
                                       "the golden check says where)",
                                       nd->elements));
    CheckResult r{ContractMetrics{breaches, std::nullopt}};
    if (breaches.empty()) {
        r.verdict = Verdict::Pass;
        r.reason = "inputs untouched, nothing written outside out or its ABI blocks, out written before it is read";
        return r;
    }
    r.verdict = Verdict::Fail;
    r.reason = fmt::format("{}", fmt::join(breaches, "; "));
    return r;
}

std::string race_signature(const std::string &violation) {
    static constexpr std::string_view kMark = "race `";
    const auto from = violation.find(kMark);
    if (violation.find("data race") == std::string::npos || from == std::string::npos) return {};
    const auto start = from + kMark.size();
    const auto end = violation.find('`', start);
    return end == std::string::npos ? std::string() : violation.substr(start, end - start);
}

CheckResult interpreter_contract_check(const std::vector<std::string> &violations, const std::string &kernel,
                                       const std::vector<KnownRace> &known) {
    std::vector<std::string> unknown, accepted, signatures;
    for (const auto &v : violations) {
        const std::string sig = race_signature(v);
        const auto k = std::find_if(known.begin(), known.end(), [&](const KnownRace &r) { return r.kernel == kernel && !sig.empty() && r.race == sig; });
        if (k == known.end()) {
            unknown.push_back(v);
            continue;
        }
        accepted.push_back(fmt::format("{}: {} (reviewed: {})", sig, k->reason, k->reviewed));
        signatures.push_back(sig);
    }
    CheckResult r = contract_check(unknown, std::nullopt);
    if (!accepted.empty()) std::get<ContractMetrics>(r.metrics).known_races = accepted;
    if (r.verdict != Verdict::Pass) return r;
    r.reason = "TPU interpreter: no race on 2 simulated cores, no out-of-bounds read (uninitialised memory read as NaN)";
    if (!accepted.empty())
        r.reason = fmt::format("TPU interpreter: no out-of-bounds read (uninitialised memory read as NaN); no race on 2 simulated cores but "
                               "{} known race{} the suite lists as reviewed (known_races, why in metrics.known_races): {}",
                               accepted.size(), accepted.size() == 1 ? "" : "s", fmt::join(signatures, "; "));
    return r;
}

}  // namespace attngate
