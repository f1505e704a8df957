// Which checks `run --checks` takes (check_requests.hpp).
#include "run/check_requests.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attngate {

const std::vector<CheckName> &requestable_checks() {
    static const std::vector<CheckName> checks = {CheckName::Golden, CheckName::Memory, CheckName::Perf, CheckName::Cost};
    return checks;
}

std::string checks_apart(const std::vector<std::string> &names) {
    const auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    if (has("cost") && !has("perf"))
        return "cost without perf: cost prices perf's timings and fails when they regress, so it gates throughput too; "
               "ask for perf as well, or leave cost out (on shared runners, `attngate ab` between base and head gates both)";
    return {};
}

std::string not_requestable(std::string_view name) {
    const auto c = parse_enum<CheckName>(name);
    if (c && std::find(requestable_checks().begin(), requestable_checks().end(), *c) != requestable_checks().end()) return {};
    std::vector<std::string_view> known;
    for (const CheckName k : requestable_checks()) known.push_back(enum_name(k));
    const auto brought_by = [&](std::string_view how) {
        return fmt::format("\"{}\" is not asked for on its own: {} (known: {})", name, how, fmt::join(known, ", "));
    };
    if (!c) return fmt::format("unknown check \"{}\" (known: {})", name, fmt::join(known, ", "));
    switch (*c) {
    case CheckName::Numerics: return brought_by("it runs with golden, on the same outputs");
    case CheckName::Contract: return brought_by("it runs with golden, on the same calls (inputs, guards and poison watched)");
    case CheckName::Program: return brought_by("it runs with golden, for an adapter kernel that lowers for a TPU");
    case CheckName::Compile: return brought_by("it runs with perf, for an adapter kernel's compile time");
    case CheckName::Instructions: return brought_by("it is perf counted in instructions: --perf-metric instructions");
    default: return fmt::format("unknown check \"{}\" (known: {})", name, fmt::join(known, ", "));
    }
}

}  // namespace attngate
