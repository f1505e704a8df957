// The types of the metrics that code reads as numbers. A check's metrics are an open JSON
// object (results.json, baseline values), but the perf rule, compare, the Google Benchmark
// export and the HTML report read some fields as numbers: a string there must be bad input
// with its JSON path when the file is loaded, not a Boost.JSON exception or unescaped HTML later.
#pragma once

#include <optional>
#include <string>

#include "io/json_io.hpp"

namespace attngate {

/// The first metric of the wrong type (a numeric field that is not a number or null, a
/// samples array with a non-number), named by file and JSON path; nothing when all are right.
std::optional<Error> check_metric_types(const json::object &metrics, const std::string &file, const std::string &path);

}  // namespace attngate
