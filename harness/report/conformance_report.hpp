// The conformance check's report: console text (one line per probe case, the numbers
// behind it) and JSON, from a ConformanceReport alone.
#pragma once

#include <string>

#include <boost/json.hpp>

#include "io/files.hpp"
#include "results/conformance_result.hpp"

namespace attngate {

/// "  scale   scale_then_bias   attngate  follows ..." for one probe case.
std::string conformance_line(const ProbeOutcome &o);

/// Every kernel's verdict with its failing probe cases and the probes not run, then the
/// count (the passing lines are the progress lines, printed as they come).
std::string conformance_console(const ConformanceReport &r);

boost::json::object conformance_json(const ConformanceReport &r);

/// How a file conformance_json wrote (pretty-printed) is known: it starts with the verdict.
inline constexpr OutputMark kConformanceJsonMark{"{\n  \"pass\": ", "\"kernels\": "};

}  // namespace attngate
