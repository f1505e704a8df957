// Whether a fingerprint read from a file (a baseline's provenance, a golden's fingerprint.json)
// has the shape docs/results.schema.json gives $defs/fingerprint, before a run copies it into
// its results.
#pragma once

#include <optional>
#include <string>

#include <boost/json.hpp>

namespace attngate {

/// The JSON path below `at` of the first value of the wrong type ("$.kernels.flash: expected
/// a string"), or nullopt when the object fits.
std::optional<std::string> fingerprint_shape_error(const boost::json::object &fp, const std::string &at = "$");

}  // namespace attngate
