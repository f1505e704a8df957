// Console reporter: one aligned table line per case x kernel as results arrive, then a
// summary. Pure functions from results data to text; the CLI prints them.
#pragma once

#include <string>

#include "results/fingerprint.hpp"
#include "results/results.hpp"

namespace attngate {

std::string console_header();
std::string console_line(const CaseResult &r, size_t done, size_t total);
/// The single updating progress line for a terminal (starts with \r, clears to the end):
/// case i of N, elapsed time and an estimate of the time left.
std::string console_progress(const CaseResult &r, size_t done, size_t total, double elapsed_s);

/// The fingerprint as "key: value" lines.
std::string console_fingerprint(const json::object &fp);

/// What moved between two fingerprints, one line per change ("nothing moved" when none).
std::string console_fingerprint_diff(const std::vector<FingerprintChange> &changes);

std::string console_summary(const RunResults &r, const std::string &results_path);
/// The closing lines of a failed run: one per failure group, then its first rows (errors
/// first); "" when nothing failed. Part of console_summary; `ab` prints them on their own.
std::string grouped_failures(const RunResults &r);

}  // namespace attngate
