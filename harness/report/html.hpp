// HTML reporter: one self-contained file (inline CSS, JS and data; no network) that opens
// from a CI artifact. Every string taken from the inputs is escaped.
#pragma once

#include <string>

#include "report/summary.hpp"
#include "results/results.hpp"

namespace attngate {

/// The whole report: verdict header, the fingerprint diff, workloads, a sortable and
/// filterable table of every case x kernel x check (failures first), and per case x kernel
/// its numerics (with the error heatmap), memory, throughput, cost and trend charts.
std::string html_serialize(const RunResults &r, const ReportContext &ctx);

/// The anchor of a case x kernel's details section: "r-" and its index in the results.
std::string case_anchor(const RunResults &r, const CaseResult *c);

/// The verdict matrix: cases grouped by feature as rows, kernels as columns, each cell one
/// block per check coloured by verdict (golden shaded by its margin), titled with the
/// numbers and linking to the case x kernel's section.
std::string html_matrix(const RunResults &r);

/// The failures grouped by cause (failure_groups), each expandable to its rows.
std::string html_failure_groups(const RunResults &r);
/// The rows whose TPU program changed (against the baseline or side A): each with its
/// changed parts, line counts and unified diff, collapsed (html_programs.cpp); "" when none.
std::string html_programs(const RunResults &r);

/// Every row's details as one JSON block (<script type="application/json" id="row-data">),
/// from which the script makes the results table, the per case x kernel sections and the
/// matrix's titles: per row its case, kernel, verdict, params, version, seconds, checks and
/// trends over ctx.trends; per check its verdict, reason, metrics as the tables show them
/// (their names once per check, as the key numbers' names), figures' data and notes (the
/// last two left out when empty; memory series as [value, count] runs).
/// Repeated strings are held once, by index. No '<' inside, so no input can close the block.
std::string html_row_data(const RunResults &r, const ReportContext &ctx);

}  // namespace attngate
