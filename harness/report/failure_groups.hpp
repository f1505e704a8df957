// Failures grouped by cause: one group per kernel x check x verdict x kind of reason, with
// the count, the cases and the range of the deciding number. Every reporter (HTML, Markdown,
// console, JUnit) shows this one grouping, so they cannot tell different stories.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "report/summary.hpp"

namespace attngate {

/// One cause: the same kernel failing the same check for the same kind of reason.
struct FailureGroup {
    /// Reads the number whose range a group shows from one of its checks.
    using Figure = std::optional<double> (*)(const CheckResult &);
    std::string kernel;
    CheckName check = CheckName::Golden;
    Verdict verdict = Verdict::Fail;  ///< Fail or Error
    std::string kind;                 ///< e.g. "heap leak", "max abs error", "crash SIGSEGV"
    std::vector<CheckRow> rows;       ///< the failing case x kernel x check, in results order
    size_t of = 0;                    ///< how many cases this kernel x check ran on
    Figure figure = nullptr;          ///< the number whose range is shown; nullptr when none
    std::string unit;
    double lo = 0, hi = 0;            ///< its range over the rows (when has_range)
    bool has_range = false;
};

/// Every failing or erroring check, grouped; errors first, then the largest groups.
std::vector<FailureGroup> failure_groups(const RunResults &r);

/// Which group each failing check is in.
std::unordered_map<const CheckResult *, const FailureGroup *> index_groups(const std::vector<FailureGroup> &groups);

/// The group in one line, the same in every report, e.g.
/// "leaky · memory: heap leak on 26/26 cases, 16.5–18.9 B/call".
std::string describe_group(const FailureGroup &g);

/// How many kernels convention_advice names, one line each, before "… and N more".
inline constexpr size_t kMaxConventionAdvice = 3;

/// What to try next for a kernel that failed the golden check on every case it computed (two
/// or more) and passed none: such a kernel most often follows another convention (scale, causal
/// alignment, GQA mapping, soft-cap order), which `attngate conform` names; the line gives the
/// conform command for the kernel's origin. One line per such kernel (block configurations are
/// their kernel's), at most kMaxConventionAdvice, then one line counting the rest; empty when
/// there is none.
std::vector<std::string> convention_advice(const RunResults &r);

/// The group's cases, comma-separated, at most max_shown then "… +N".
std::string group_cases(const FailureGroup &g, size_t max_shown);

/// What kind of not-an-answer an erroring check was: "hang", "crash", "exit", "lost", or
/// "kernel_error" when the kernel returned an error itself.
std::string error_kind(const CheckResult &k);

/// The kind of reason of a failing check: its reason's words before the first number or
/// separator (e.g. "heap leak", "max abs error"), or error_kind for an error.
std::string reason_kind(const CheckResult &k);

}  // namespace attngate
