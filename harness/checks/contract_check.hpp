// The contract check: did the kernel keep the ABI's promises around its calls? It may not
// write to its inputs, write outside its output or its ABI allocations, free what it was
// not given, or read its output before writing it. A breach is the breaker's failure, so
// the next, innocent kernel is never blamed for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/observation.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"

namespace attngate {

CheckResult contract_check(const std::vector<std::string> &violations, const std::optional<Nondeterminism> &nondeterminism);

/// The signature of a race the TPU interpreter's check reported ("... race `<signature>` (n
/// times): ..."); empty for any other violation.
std::string race_signature(const std::string &violation);

/// An adapter kernel's contract row from the TPU interpreter's violations: a race the suite
/// lists for this kernel (known_races, matched on the whole signature) is kept beside the
/// verdict with its reason; any other violation fails the row.
CheckResult interpreter_contract_check(const std::vector<std::string> &violations, const std::string &kernel,
                                       const std::vector<KnownRace> &known);

}  // namespace attngate
