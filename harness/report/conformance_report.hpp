// The conformance check's report: console text (one line per probe case, the numbers
// behind it) and JSON, from a ConformanceReport alone.
#pragma once

#include <string>

#include <boost/json.hpp>

#include "run/conform.hpp"

namespace attngate {

/// "  scale   scale_then_bias   attngate  follows ..." for one probe case.
std::string conformance_line(const ProbeOutcome &o);

/// Every kernel's verdict, its probes and the skipped ones, then the summary.
std::string conformance_console(const ConformanceReport &r);

boost::json::object conformance_json(const ConformanceReport &r);

}  // namespace attngate
