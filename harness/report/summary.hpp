// What every reporter says the same way: counts per check, rows failures first, the key
// numbers of a check, and which fingerprint the run is compared with. Reads results data only.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "results/fingerprint.hpp"
#include "results/results.hpp"
#include "results/trends.hpp"

namespace attngate {

/// One case x kernel x check, the unit of the reports' tables and of JUnit test cases.
struct CheckRow {
    const CaseResult *result;
    const CheckResult *check;
};

/// Every case x kernel x check: errors first, then failures, passes and skips (stable otherwise).
std::vector<CheckRow> rows_failures_first(const RunResults &r);

struct CheckCounts {
    CheckName check = CheckName::Golden;
    size_t pass = 0, fail = 0, skip = 0, error = 0;
    size_t total() const { return pass + fail + skip + error; }
};

/// Where a verdict sorts in the reports: errors, failures, passes, skips.
int verdict_rank(Verdict v);

/// Pass / fail / skip / error counts per check, in the order the checks first appear.
std::vector<CheckCounts> counts_per_check(const RunResults &r);

/// How many rows a gating check judged against a reference, and why the others were not, in
/// the order first seen. Perf: "too noisy", "no baseline for class X", "machine speed moved",
/// "stale baseline?", "baseline from another machine", "not timed". Numerics: "no baseline for
/// path X", "compared with the last run only", "not run". Every report says it the same way.
struct CheckCoverage {
    CheckName check = CheckName::Perf;
    size_t rows = 0;   ///< rows with the check
    size_t gated = 0;  ///< judged: a pass or a failure the rule stands behind
    std::vector<std::pair<std::string, size_t>> not_gated;
};

/// Perf or numerics.
CheckCoverage check_coverage(const RunResults &r, CheckName check);

/// "perf: 2 of 93 rows gated (42 too noisy, 21 no baseline for class X, 5 not timed)";
/// "" for a run without rows of the check.
std::string coverage_said(const CheckCoverage &c);

/// The rows whose output bits moved against their reference without failing (numerics is
/// information unless a suite asks for bitwise stability), named: "numerics: bits changed on
/// 1 row without failing: mha_f32 / flash (1 of 256 elements changed, max 1 ulp of float32)"; the
/// first three, then a count. "" when none moved.
std::string numerics_changed_said(const RunResults &r);

/// The gate's checks (golden, memory, perf, cost) this run did not apply, said so that a PASS is
/// not read as theirs: "not checked: cost (`attngate ab` compares golden, numerics, memory and
/// perf; `attngate run` gates the others)"; empty when all ran.
std::string unchecked_said(const RunResults &r);

/// "1 kernel source(s) did not load, nothing ran" (no row ran) or "..., the other kernels
/// ran" when results.load_errors is not empty (the run fails either way); "" when it is.
std::string load_errors_said(const RunResults &r);

/// For one shard's results: "shard 1 of 3: 3 of the plan's 10 case × kernel rows ran here; ...",
/// so that its PASS is not read as the suite's; empty for a whole run or a merge.
std::string shard_said(const RunResults &r);
/// "program: the TPU program changed on N row(s) ...", naming the first rows; "" when none changed.
std::string program_changed_said(const RunResults &r);

/// Each gating check's coverage_said that is not empty, perf first: what the verdict line,
/// the first screen and the Markdown say.
std::vector<std::string> gating_said(const RunResults &r);

/// The numbers that decide a check, as "name=value" pairs in one line, e.g.
/// "max_abs_error=1.2e-02 tolerance=2.9e-03 margin=4.14 rms_margin=0.8"; "" when none were measured.
std::string key_numbers(const CheckResult &c);

/// The names of the metrics key_numbers shows for a check, in its order (the HTML report's
/// script writes the same line from them and the metrics, which it holds once).
std::vector<std::string> key_number_names(CheckName check);

/// A paged case's lengths and pool from its params, as the reports show them: "paged: 5 seqs,
/// q_lens [1, 1, 1, 1, 16], kv_lens [200, 37, 1, 64, 120], page_size 16, 40 pages,
/// scattered"; a list longer than 8 shows its first 6 and last entry. "" for a dense case.
std::string paged_said(const json::object &params);

/// A number formatted as the reports show it ("-" for a missing one).
std::string format_number(const json::value *v);

/// A record's field formatted as the reports show it: a number as format_number does, a
/// name as itself; "-" when it was not measured (absent, or a number that is not finite).
template <class T>
std::string format_field(const std::optional<T> &v) {
    if (!v) return "-";
    if constexpr (std::is_enum_v<T>) {
        return enum_name(*v);
    } else {
        const json::value j = described::to_value(*v);
        return format_number(&j);
    }
}

/// The fingerprint diff a report shows and what it is against.
struct FingerprintComparison {
    std::string against;  ///< "baseline", "A side" (of an A/B run), "previous run" or "" when nothing to compare with
    std::vector<FingerprintChange> changes;
};

/// Against the baseline's fingerprint when known, else the latest history run's.
FingerprintComparison compare_fingerprints(const RunResults &r, const std::vector<RunResults> &history);

/// Extra inputs of a report beyond the results: earlier runs for trends, the HTML's name.
struct ReportContext {
    std::vector<RunResults> history;  ///< earlier runs of the same suite, oldest first
    std::string html_name;            ///< how the markdown refers to the HTML artifact
    /// Trends over the history (the store's records or --history files) and this run, with
    /// change points; empty when no history was given.
    TrendReport trends;
};

}  // namespace attngate
