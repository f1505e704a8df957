// Memory check verdicts.
#include "checks/memory_check.hpp"

#include <algorithm>
#include <cmath>

namespace attngate {

double least_squares_slope(const std::vector<int64_t> &y) {
    const size_t n = y.size();
    if (n < 2) return 0.0;
    const double mean_x = (static_cast<double>(n) - 1) / 2;
    double mean_y = 0.0;
    for (int64_t v : y) mean_y += static_cast<double>(v);
    mean_y /= static_cast<double>(n);
    double sxy = 0.0, sxx = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double dx = static_cast<double>(i) - mean_x;
        sxy += dx * (static_cast<double>(y[i]) - mean_y);
        sxx += dx * dx;
    }
    return sxy / sxx;
}

double sustained_slope(const std::vector<int64_t> &y) {
    const size_t half = y.size() / 2;
    if (half < 2) return std::min(least_squares_slope(y), median_increment(y));  // too short to halve
    const std::vector<int64_t> first(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(half));
    const std::vector<int64_t> second(y.end() - static_cast<std::ptrdiff_t>(half), y.end());
    return std::min({least_squares_slope(y), least_squares_slope(first), least_squares_slope(second)});
}

double median_increment(const std::vector<int64_t> &y) {
    if (y.size() < 2) return 0.0;
    std::vector<int64_t> d(y.size() - 1);
    for (size_t i = 1; i < y.size(); ++i) d[i - 1] = y[i] - y[i - 1];
    std::sort(d.begin(), d.end());
    return static_cast<double>(d[(d.size() - 1) / 2]);  // the lower median: growth on more than half the calls
}

const char *workspace_growth_name(uint32_t growth) {
    switch (growth) {
    case ATTNGATE_WORKSPACE_CONSTANT: return "constant";
    case ATTNGATE_WORKSPACE_LINEAR: return "linear";
    case ATTNGATE_WORKSPACE_QUADRATIC: return "quadratic";
    default: return "unspecified";
    }
}

namespace {

/// Why the probe at doubled sequence lengths breaks the promise, or empty.
std::string broken_promise(const MemoryObservation &m, const MemoryPolicy &policy, uint32_t growth) {
    if (m.probe_abi_peak_bytes < 0 || growth == ATTNGATE_WORKSPACE_UNSPECIFIED) return {};
    // Doubling Sq and Sk may multiply a linear workspace by 2 and a quadratic one by 4.
    const double factor = growth == ATTNGATE_WORKSPACE_CONSTANT ? 1.0 : growth == ATTNGATE_WORKSPACE_LINEAR ? 2.0 : 4.0;
    const double allowed = factor * static_cast<double>(m.abi_peak_bytes) * (factor > 1 ? 1.05 : 1.0) + (factor > 1 ? 4096 : 0);
    if (static_cast<double>(m.probe_abi_peak_bytes) > allowed)
        return fmt::format("workspace broke its {} promise: {} B at the case's lengths, {} B at Sq={} Sk={} (allowed {:.0f})",
                           workspace_growth_name(growth), m.abi_peak_bytes, m.probe_abi_peak_bytes, m.probe_seq_q,
                           m.probe_seq_k, allowed);
    if (growth == ATTNGATE_WORKSPACE_CONSTANT && m.rss_peak_delta_bytes >= 0 && m.probe_rss_peak_delta_bytes >= 0 &&
        m.probe_rss_peak_delta_bytes - m.rss_peak_delta_bytes > policy.rss_promise_slack_bytes)
        return fmt::format("peak RSS of one call grew by {} B when the sequences doubled, for a constant-workspace kernel "
                           "(memory allocated outside the ABI allocator)",
                           m.probe_rss_peak_delta_bytes - m.rss_peak_delta_bytes);
    return {};
}

/// A kernel behind an adapter: no ABI allocator, so live arrays, device bytes and the
/// adapter's RSS are what is seen.
CheckResult remote_memory_check(const MemoryObservation &m, const MemoryPolicy &policy) {
    const double arrays_slope = least_squares_slope(m.live_arrays);
    const double array_bytes_slope = least_squares_slope(m.live_array_bytes);
    const double device_slope = least_squares_slope(m.device_bytes_in_use);
    const double rss_slope = least_squares_slope(m.rss_bytes);
    MemoryMetrics out;
    out.calls = m.calls;
    out.source = m.device_bytes_in_use.empty() ? "rss" : "device";
    out.live_arrays = m.live_arrays, out.live_array_bytes = m.live_array_bytes, out.device_bytes_in_use = m.device_bytes_in_use;
    out.rss_bytes = m.rss_bytes;
    out.leak_bytes_per_call = std::max(array_bytes_slope, device_slope);
    out.live_arrays_per_call = arrays_slope;
    out.rss_slope_bytes_per_call = rss_slope;
    out.leak_noise_floor_bytes_per_call = policy.heap_leak_bytes_per_call;
    if (m.device_peak_bytes >= 0) out.device_peak_bytes = m.device_peak_bytes;
    CheckResult r(std::move(out), Verdict::Fail);
    if (arrays_slope >= policy.live_arrays_per_call) {
        r.reason = fmt::format("live array leak: {:.1f} arrays ({:.0f} B) retained per call over {} calls", arrays_slope,
                               array_bytes_slope, m.live_arrays.size());
        return r;
    }
    if (array_bytes_slope >= policy.heap_leak_bytes_per_call || device_slope >= policy.heap_leak_bytes_per_call) {
        r.reason = fmt::format("device memory leak: {:.0f} B retained per call over {} calls",
                               std::max(array_bytes_slope, device_slope), std::max(m.live_array_bytes.size(), m.device_bytes_in_use.size()));
        return r;
    }
    if (rss_slope >= policy.remote_rss_leak_bytes_per_call) {
        r.reason = fmt::format("RSS leak: the adapter's resident memory grows {:.0f} B per call over {} calls", rss_slope, m.rss_bytes.size());
        return r;
    }
    r.verdict = Verdict::Pass;
    r.reason = fmt::format("no leak: live arrays {:+.1f}/call, adapter RSS {:+.0f} B/call over {} calls; peak not compared "
                           "(an adapter's kernels are gated on leaks only)", arrays_slope, rss_slope, m.rss_bytes.size());
    return r;
}

}  // namespace

CheckResult memory_check(const MemoryObservation &m, const std::optional<MemoryBaseline> &baseline,
                         const MemoryPolicy &policy, uint32_t workspace_growth, const std::string &against) {
    if (!m.abi_measured) return remote_memory_check(m, policy);
    // A leak grows all along the series; a one-time step (a worker thread touching its
    // scratch for the first time, a cache filling) is not one: the heap must grow in both
    // halves, and RSS, which moves in pages, on most calls.
    const double heap_slope = sustained_slope(m.heap_live_bytes);
    const double rss_slope = std::min(least_squares_slope(m.rss_bytes), median_increment(m.rss_bytes));
    MemoryMetrics out;
    out.calls = m.calls;
    out.abi_peak_bytes = m.abi_peak_bytes, out.abi_leaked_bytes = m.abi_leaked_bytes;
    out.abi_unfreed_allocations = m.abi_unfreed_allocations;
    out.heap_live_bytes = m.heap_live_bytes, out.rss_bytes = m.rss_bytes;
    out.leak_bytes_per_call = heap_slope, out.rss_slope_bytes_per_call = rss_slope;
    out.leak_noise_floor_bytes_per_call = policy.heap_leak_bytes_per_call;
    out.rss_peak_delta_bytes = m.rss_peak_delta_bytes;
    out.workspace_promise = workspace_growth_name(workspace_growth);
    out.probe_seq_q = m.probe_seq_q, out.probe_seq_k = m.probe_seq_k;
    out.probe_abi_peak_bytes = m.probe_abi_peak_bytes, out.probe_rss_peak_delta_bytes = m.probe_rss_peak_delta_bytes;
    CheckResult r(std::move(out), Verdict::Fail);
    MemoryMetrics &metrics = r.as<MemoryMetrics>();
    if (m.abi_leaked_bytes > 0) {  // below 0: it gave back what it kept before the measured calls
        r.reason = fmt::format("ABI allocator leak: {} B in {} allocation(s) never freed over {} calls", m.abi_leaked_bytes,
                               m.abi_unfreed_allocations, m.calls);
        return r;
    }
    if (heap_slope >= policy.heap_leak_bytes_per_call) {
        r.reason = fmt::format("heap leak: {:.1f} B retained per call over {} calls (outside the ABI allocator)", heap_slope,
                               m.heap_live_bytes.size());
        return r;
    }
    if (rss_slope >= policy.rss_leak_bytes_per_call) {
        r.reason = fmt::format("RSS leak: resident memory grows {:.0f} B per call over {} calls", rss_slope, m.rss_bytes.size());
        return r;
    }
    if (const std::string why = broken_promise(m, policy, workspace_growth); !why.empty()) {
        r.reason = why;
        return r;
    }
    metrics.abi_retained_bytes = m.abi_retained_bytes;
    metrics.retention_limit_bytes = policy.retention_limit_bytes;
    if (m.abi_retained_bytes > policy.retention_limit_bytes) {
        r.reason = fmt::format("kept {} B of ABI memory from its first call on and never gave it back (limit {} B)",
                               m.abi_retained_bytes, policy.retention_limit_bytes);
        return r;
    }
    if (m.abi_retained_bytes > 0)
        r.notes.push_back(fmt::format("keeps {} B of ABI memory from its first call on (one-time; under the {} B limit)",
                                      m.abi_retained_bytes, policy.retention_limit_bytes));
    r.verdict = Verdict::Pass;
    if (!baseline) {
        r.reason = fmt::format("no leak; peak {} B (no memory baseline yet: attngate baseline update --checks memory)", m.abi_peak_bytes);
        return r;
    }
    const int64_t base_peak = baseline->abi_peak_bytes.value_or(0);
    const double growth = base_peak > 0 ? 100.0 * (static_cast<double>(m.abi_peak_bytes) / static_cast<double>(base_peak) - 1.0)
                                        : (m.abi_peak_bytes > 0 ? INFINITY : 0.0);
    metrics.peak_baseline_bytes = base_peak;
    metrics.peak_growth_pct = growth;
    if (growth > policy.peak_growth_pct + 1e-9) {  // 1100 vs 1000 is 10%, not 10.000000000000009%
        r.verdict = Verdict::Fail;
        r.reason = fmt::format("peak memory grew {:.1f}% over {} ({} B -> {} B; limit {:.0f}%)", growth, against, base_peak,
                               m.abi_peak_bytes, policy.peak_growth_pct);
    } else {
        r.reason = fmt::format("no leak; peak {} B ({:+.1f}% against {})", m.abi_peak_bytes, growth, against);
    }
    return r;
}

}  // namespace attngate
