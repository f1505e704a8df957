// The contract check: did the kernel keep the ABI's promises around its calls? It may not
// write to its inputs, write outside its output or its ABI allocations, free what it was
// not given, or read its output before writing it. A breach is the breaker's failure, so
// the next, innocent kernel is never blamed for it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/observation.hpp"
#include "results/results.hpp"

namespace attngate {

CheckResult contract_check(const std::vector<std::string> &violations, const std::optional<Nondeterminism> &nondeterminism);

}  // namespace attngate
