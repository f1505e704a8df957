// Console reporter: one aligned table line per case x kernel as results arrive, then a
// summary. Pure functions from results data to text; the CLI prints them.
#pragma once

#include <string>

#include "results.hpp"

namespace attngate {

std::string console_header();
std::string console_line(const CaseResult &r, size_t done, size_t total);
std::string console_summary(const RunResults &r, const std::string &results_path);

}  // namespace attngate
