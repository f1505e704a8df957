// The memory check: leaks (ABI allocator with zero tolerance; process heap and RSS by the
// least-squares slope over N calls), the kernel's own workspace promise, and peak memory
// against its baseline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "results/baseline_values.hpp"
#include "backend/observation.hpp"
#include "results/results.hpp"

namespace attngate {

struct MemoryPolicy {
    double peak_growth_pct = 10.0;  ///< fail on more ABI peak growth than this against the baseline
    /// Heap slope at or above this is a leak. The noise floor of the heap probe measured on
    /// clean kernels is 0 B/call (glibc's accounting is exact once warmed up); one byte
    /// leaked per call shows as a 32-byte chunk per call, so 8 keeps clear of both.
    double heap_leak_bytes_per_call = 8.0;
    /// RSS moves in pages and by the allocator's own decisions; a slope of a page per call
    /// over the series is a leak outside malloc (mmap, for instance).
    double rss_leak_bytes_per_call = 4096.0;
    /// Slack for the peak-RSS eye of a constant-workspace promise (page and arena effects).
    int64_t rss_promise_slack_bytes = 8 << 20;
    /// A runtime behind an adapter (JAX) warms its allocator up over the first calls and
    /// then plateaus (RSS +3 to +9 MB over 50 calls, measured): only a slope this steep is
    /// a leak there. Its live arrays and device bytes are the exact eyes.
    double remote_rss_leak_bytes_per_call = 1 << 20;
    double live_arrays_per_call = 0.5;  ///< live array count slope that is a leak
    /// ABI bytes a kernel may keep from its first call on (a cache, a plan) before it fails;
    /// below this the retention is a note.
    int64_t retention_limit_bytes = int64_t{1} << 20;
};

/// Least-squares slope of y against its index (bytes per call); 0 for fewer than 2 points.
double least_squares_slope(const std::vector<int64_t> &y);

/// The smallest least-squares slope of the whole series and of each half: what a leak
/// sustains, where a one-time step within either half scores 0.
double sustained_slope(const std::vector<int64_t> &y);

/// The lower median of the call-to-call increments: positive only when memory grew on
/// more than half of the calls.
double median_increment(const std::vector<int64_t> &y);

/// `against` names the baseline in the reasons ("its baseline"; in an A/B run, "side A").
CheckResult memory_check(const MemoryObservation &m, const std::optional<MemoryBaseline> &baseline,
                         const MemoryPolicy &policy, uint32_t workspace_growth, const std::string &against = "its baseline");

/// "constant", "linear", "quadratic" or "unspecified".
const char *workspace_growth_name(uint32_t growth);

}  // namespace attngate
