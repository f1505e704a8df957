// Type checks of the numeric metrics, shared by the results and baseline readers.
#include "results/metric_types.hpp"

#include <span>
#include <string_view>

namespace attngate {

namespace {

/// Metrics read as numbers anywhere (reporters, compare, the perf rule, cost); null means "not measured".
constexpr std::string_view kNumeric[] = {
    "median_s", "mad_s", "baseline_median_s", "tokens_per_s", "gflops", "compile_s", "baseline_compile_s",
    "ci_low", "ci_high", "p_value", "p_adjusted", "ratio", "usd_per_million_tokens", "baseline_usd_per_million_tokens",
    "price_per_hour", "max_abs_error", "max_rel_error", "rms_error", "nmse", "tolerance", "margin", "rms_margin",
    "leak_bytes_per_call", "rss_slope_bytes_per_call", "abi_peak_bytes", "abi_leaked_bytes", "peak_bytes", "threshold_pct",
    "calibration_ratio", "parallel_calibration_ratio", "absolute_ratio", "reproduction_ratio", "reproduction_ci_low",
    "reproduction_ci_high", "looks"};

/// Arrays of seconds, read element by element as numbers (the perf rule, the calibration
/// and the machine-speed guard).
constexpr std::string_view kNumericArrays[] = {"samples_s",
                                               "cpu_samples_s",
                                               "baseline_samples_s",
                                               "calibration_s",
                                               "baseline_calibration_s",
                                               "parallel_calibration_s",
                                               "baseline_parallel_calibration_s",
                                               "reproduction_samples_s",
                                               "reproduction_calibration_s",
                                               "reproduction_parallel_calibration_s"};

bool listed(std::string_view key, std::span<const std::string_view> names) {
    for (auto n : names)
        if (n == key) return true;
    return false;
}

}  // namespace

std::optional<Error> check_metric_types(const json::object &metrics, const std::string &file, const std::string &path) {
    for (const auto &[key, v] : metrics) {
        if (listed(key, kNumeric) && !v.is_number() && !v.is_null())
            return Error{ErrorKind::BadInput,
                         fmt::format("{}: {}.{}: expected a number or null, got {}", file, path, std::string_view(key), json_kind_name(v))};
        if (!listed(key, kNumericArrays)) continue;
        if (!v.is_array())
            return Error{ErrorKind::BadInput, fmt::format("{}: {}.{}: expected an array of seconds, got {}", file, path,
                                                          std::string_view(key), json_kind_name(v))};
        const auto &a = v.get_array();
        for (size_t i = 0; i < a.size(); ++i)
            if (!a[i].is_number())
                return Error{ErrorKind::BadInput, fmt::format("{}: {}.{}[{}]: expected a number of seconds, got {}", file, path,
                                                              std::string_view(key), i, json_kind_name(a[i]))};
    }
    return std::nullopt;
}

}  // namespace attngate
