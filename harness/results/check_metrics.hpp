// Each check's numbers as a typed record, the way google/benchmark's reporters read a
// typed Run. Checks fill them, reports read them; only the results and baseline readers
// and writers turn them into JSON (io/json_describe.hpp), under the member's own name.
// Adding a metric is one member plus its name in the BOOST_DESCRIBE_STRUCT below it. An
// empty std::optional is "not measured" and is not written; a NaN double is written as null.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/describe.hpp>

#include "stats/perf_decision.hpp"

namespace attngate {

/// The checks, in the order of CheckMetrics' alternatives.
enum class CheckName { Golden, Numerics, Contract, Memory, Perf, Compile, Cost, Instructions, Program };
constexpr auto enum_names(CheckName) {
    using enum CheckName;
    return std::array{std::pair{Golden, "golden"}, std::pair{Numerics, "numerics"},         std::pair{Contract, "contract"},
                      std::pair{Memory, "memory"}, std::pair{Perf, "perf"},                 std::pair{Compile, "compile"},
                      std::pair{Cost, "cost"},     std::pair{Instructions, "instructions"}, std::pair{Program, "program"}};
}

/// A perf or instruction-count check's state: the decision's, or why there was none.
/// MachineMoved: not gated, the machine's speed moved since the baseline or during the run.
/// StaleBaseline: faster than a stored baseline beyond the threshold, so the baseline can no
/// longer catch a regression of today's speed: not gated until it is accepted. (Faster than
/// side A of an A/B run is an Improvement, gated.)
enum class PerfCheckStatus { Ok, Regression, Improvement, TooNoisy, NoBaseline, OtherMachine, MachineMoved, StaleBaseline, Collecting };
constexpr auto enum_names(PerfCheckStatus) {
    using enum PerfCheckStatus;
    return std::array{std::pair{Ok, "ok"},
                      std::pair{Regression, "regression"},
                      std::pair{Improvement, "improvement"},
                      std::pair{TooNoisy, "too_noisy"},
                      std::pair{NoBaseline, "no_baseline"},
                      std::pair{OtherMachine, "other_machine"},
                      std::pair{MachineMoved, "machine_moved"},
                      std::pair{StaleBaseline, "stale_baseline"},
                      std::pair{Collecting, "collecting"}};
}

/// Whether the perf rule judged the row (a pass or a regression it could stand behind).
constexpr bool perf_gated(PerfCheckStatus s) {
    return s == PerfCheckStatus::Ok || s == PerfCheckStatus::Regression || s == PerfCheckStatus::Improvement;
}

/// What a perf check's decision compared: times relative to the calibration workload,
/// absolute times against a stored baseline, paired A/B samples, or this run's calibrated
/// median against the window of past runs (perf_window.hpp).
enum class PerfMode { Calibrated, Absolute, Ab, Window };
constexpr auto enum_names(PerfMode) {
    using enum PerfMode;
    return std::array{std::pair{Calibrated, "calibrated"}, std::pair{Absolute, "absolute"}, std::pair{Ab, "ab"},
                      std::pair{Window, "window"}};
}

enum class NumericsStatus { Identical, Changed, NoReference };
constexpr auto enum_names(NumericsStatus) {
    using enum NumericsStatus;
    return std::array{std::pair{Identical, "identical"}, std::pair{Changed, "changed"}, std::pair{NoReference, "no_reference"}};
}

/// The program check's state: the TPU program the same as the reference's, changed, or nothing to compare with.
enum class ProgramStatus { Identical, Changed, NoReference };
constexpr auto enum_names(ProgramStatus) {
    using enum ProgramStatus;
    return std::array{std::pair{Identical, "identical"}, std::pair{Changed, "changed"}, std::pair{NoReference, "no_reference"}};
}

/// Max abs error binned over sequence position x value head dimension: the heatmap.
struct ErrorMap {
    int64_t rows = 0, cols = 0, seq_len = 0, head_dim_v = 0;
    std::string row_axis, col_axis, statistic;
    std::vector<std::vector<std::optional<double>>> values;  ///< [rows][cols]; nullopt: NaN or inf
};
BOOST_DESCRIBE_STRUCT(ErrorMap, (), (rows, cols, seq_len, head_dim_v, row_axis, col_axis, statistic, values))

/// How a kernel's host ended when it crashed, hung or went away (on the erroring checks).
struct CrashRecord {
    std::string kind;  ///< "crash", "timeout", "exit" or "lost"
    double seconds = 0.0;
    std::string stderr_tail;
    std::optional<std::string> signal;
    std::optional<int64_t> exit_code;
    std::optional<std::string> message;
};
BOOST_DESCRIBE_STRUCT(CrashRecord, (), (kind, seconds, stderr_tail, signal, exit_code, message))

struct GoldenMetrics {
    static constexpr CheckName kCheck = CheckName::Golden;
    std::optional<double> max_abs_error, max_rel_error, rms_error, nmse;
    std::optional<double> tolerance, margin;          ///< margin: max abs error / tolerance
    std::optional<double> rms_tolerance, rms_margin;  ///< NaN: the manifest has no straightforward RMS error
    std::optional<double> straightforward_max_abs_error, straightforward_rms_error;
    std::optional<int64_t> worst_index;
    std::optional<std::string> worst_coords;
    std::optional<double> worst_got, worst_want;
    std::optional<int64_t> new_nonfinite, dropped_nan;
    std::optional<ErrorMap> error_map;
    std::optional<double> rounding_allowance;  ///< what the kernel's declared bf16 rounding widened both tolerances by
    /// Paged cases: NaN outputs the slots past kv_len caused, and those the pages no table
    /// holds caused (the backend's trace; absent when the output had no NaN or was not traced).
    std::optional<int64_t> nan_read_past_kv_len, nan_read_outside_table;
};
BOOST_DESCRIBE_STRUCT(GoldenMetrics, (),
                      (max_abs_error, max_rel_error, rms_error, nmse, tolerance, margin, rms_tolerance, rms_margin,
                       straightforward_max_abs_error, straightforward_rms_error, worst_index, worst_coords, worst_got, worst_want,
                       new_nonfinite, dropped_nan, error_map, rounding_allowance, nan_read_past_kv_len, nan_read_outside_table))

struct NumericsMetrics {
    static constexpr CheckName kCheck = CheckName::Numerics;
    // The output's sketch: what a later run is diffed against.
    std::optional<std::string> sha256;
    std::optional<int64_t> elements;
    std::optional<std::vector<uint32_t>> sample_bits;
    // The diff against the reference.
    std::optional<std::string> against;
    std::optional<bool> bit_identical, exact;
    std::optional<int64_t> compared, changed;
    std::optional<double> changed_share, max_abs_change;
    std::optional<std::optional<int64_t>> max_ulp;  ///< null: a NaN appeared or vanished
    std::optional<int64_t> nan_changed;
    std::optional<bool> bitwise_required;
    std::optional<double> change_vs_tolerance;
    std::optional<NumericsStatus> status;
    // Whether repeated calls (and a second process) agreed bit for bit.
    std::optional<bool> deterministic;
    std::optional<int64_t> nondeterministic_elements;
    std::optional<double> nondeterministic_max_abs;
    std::optional<std::string> nondeterministic_across;
};
BOOST_DESCRIBE_STRUCT(NumericsMetrics, (),
                      (sha256, elements, sample_bits, against, bit_identical, exact, compared, changed, changed_share, max_abs_change,
                       max_ulp, nan_changed, bitwise_required, change_vs_tolerance, status, deterministic, nondeterministic_elements,
                       nondeterministic_max_abs, nondeterministic_across))

struct ContractMetrics {
    static constexpr CheckName kCheck = CheckName::Contract;
    std::optional<std::vector<std::string>> violations;
    /// Races the suite lists as reviewed (known_races) that this run found: "<race>: <reason>
    /// (reviewed: <who>)". They do not fail the row.
    std::optional<std::vector<std::string>> known_races;
};
BOOST_DESCRIBE_STRUCT(ContractMetrics, (), (violations, known_races))

struct MemoryMetrics {
    static constexpr CheckName kCheck = CheckName::Memory;
    std::optional<int64_t> calls;
    std::optional<std::string> source;  ///< behind an adapter: "device" or "rss"
    std::optional<int64_t> abi_peak_bytes, abi_leaked_bytes, abi_unfreed_allocations;
    std::optional<std::vector<int64_t>> heap_live_bytes, live_arrays, live_array_bytes, device_bytes_in_use, rss_bytes;
    std::optional<double> leak_bytes_per_call, live_arrays_per_call, rss_slope_bytes_per_call, leak_noise_floor_bytes_per_call;
    std::optional<int64_t> device_peak_bytes, rss_peak_delta_bytes;
    std::optional<std::string> workspace_promise;
    std::optional<int64_t> probe_seq_q, probe_seq_k, probe_abi_peak_bytes, probe_rss_peak_delta_bytes;
    std::optional<int64_t> abi_retained_bytes, retention_limit_bytes, peak_baseline_bytes;
    std::optional<double> peak_growth_pct;
};
BOOST_DESCRIBE_STRUCT(MemoryMetrics, (),
                      (calls, source, abi_peak_bytes, abi_leaked_bytes, abi_unfreed_allocations, heap_live_bytes, live_arrays,
                       live_array_bytes, device_bytes_in_use, rss_bytes, leak_bytes_per_call, live_arrays_per_call,
                       rss_slope_bytes_per_call, leak_noise_floor_bytes_per_call, device_peak_bytes, rss_peak_delta_bytes,
                       workspace_promise, probe_seq_q, probe_seq_k, probe_abi_peak_bytes, probe_rss_peak_delta_bytes,
                       abi_retained_bytes, retention_limit_bytes, peak_baseline_bytes, peak_growth_pct))

using Seconds = std::vector<double>;

struct PerfMetrics {
    static constexpr CheckName kCheck = CheckName::Perf;
    // This run's timing.
    std::optional<Seconds> samples_s;
    std::optional<Seconds> cpu_samples_s;  ///< the process's CPU seconds per call (every thread's), beside samples_s
    std::optional<int64_t> repetitions;
    std::optional<int64_t> threads;  ///< the kernel threads it was timed on (0: every CPU)
    std::optional<double> median_s, mad_s, tokens_per_s, flops, gflops;
    std::optional<std::string> machine_class;
    std::optional<double> threshold_pct;
    std::optional<bool> strict;  ///< a case the rule cannot gate fails (written only when set)
    // The decision against the baseline (or side A).
    std::optional<Seconds> baseline_samples_s;
    std::optional<double> baseline_median_s, ratio, ci_low, ci_high, ci_level, p_value, p_adjusted, relative_noise;
    std::optional<int64_t> required_repetitions;
    std::optional<PerfCheckStatus> status;
    std::optional<PerfMode> mode;
    // A/B runs: how many looks the sequential rounds took, and the two sides.
    std::optional<int64_t> looks;
    std::optional<std::string> a, b;
    // The calibration workload, now and in the baseline (see PerfCalibration).
    std::optional<std::string> calibration_workload;
    std::optional<Seconds> calibration_s, parallel_calibration_s, baseline_calibration_s;
    std::optional<double> calibration_ratio;
    std::optional<Seconds> baseline_parallel_calibration_s;
    std::optional<double> parallel_calibration_ratio, absolute_ratio;
    // Window mode: the runs in the row's window, their spread (standard deviation of the log
    // calibrated times, %), and the run-wide shift taken out of this run (ratio, > 1: every
    // row ran slower than its window).
    std::optional<int64_t> window_runs;
    std::optional<double> window_spread_pct, run_shift;
    /// Window mode judges the fastest repetition: today's, and the window's mean in today's
    /// seconds (at today's calibration, the run-wide shift put back).
    std::optional<double> fastest_s, window_fastest_s;
    // A regression's second timing (require_reproduction).
    std::optional<Seconds> reproduction_samples_s, reproduction_calibration_s, reproduction_parallel_calibration_s;
    std::optional<double> reproduction_ratio, reproduction_ci_low, reproduction_ci_high;
    std::optional<PerfStatus> reproduction_status;
    std::optional<std::string> reproduction_error;
    // Profiler traces of a slower kernel, relative to the results file.
    std::optional<std::string> profile, profile_a, profile_b;
};
BOOST_DESCRIBE_STRUCT(PerfMetrics, (),
                      (samples_s, cpu_samples_s, repetitions, threads, median_s, mad_s, tokens_per_s, flops, gflops, machine_class, threshold_pct, strict,
                       baseline_samples_s, baseline_median_s, ratio, ci_low, ci_high, ci_level, p_value, p_adjusted, relative_noise,
                       required_repetitions, status, mode, looks, a, b, calibration_workload, calibration_s, parallel_calibration_s,
                       baseline_calibration_s, calibration_ratio, baseline_parallel_calibration_s, parallel_calibration_ratio,
                       absolute_ratio, window_runs, window_spread_pct, run_shift, fastest_s, window_fastest_s, reproduction_samples_s, reproduction_calibration_s, reproduction_parallel_calibration_s,
                       reproduction_ratio, reproduction_ci_low, reproduction_ci_high, reproduction_status, reproduction_error, profile,
                       profile_a, profile_b))

struct CompileMetrics {
    static constexpr CheckName kCheck = CheckName::Compile;
    std::optional<double> compile_s, threshold_pct, baseline_compile_s, ratio;
};
BOOST_DESCRIBE_STRUCT(CompileMetrics, (), (compile_s, threshold_pct, baseline_compile_s, ratio))

struct CostMetrics {
    static constexpr CheckName kCheck = CheckName::Cost;
    std::optional<double> usd_per_million_tokens;
    std::optional<std::string> device_class, currency;
    std::optional<double> price_per_hour;
    std::optional<std::string> price_source, price_date;
    std::optional<double> baseline_usd_per_million_tokens;
};
BOOST_DESCRIBE_STRUCT(CostMetrics, (),
                      (usd_per_million_tokens, device_class, currency, price_per_hour, price_source, price_date,
                       baseline_usd_per_million_tokens))

struct InstructionsMetrics {
    static constexpr CheckName kCheck = CheckName::Instructions;
    std::optional<std::string> mode;  ///< "instructions", as the reports name the perf mode
    std::optional<double> instructions, threshold_pct;
    std::optional<std::string> machine_class;
    std::optional<double> baseline_instructions, ratio;
    std::optional<PerfCheckStatus> status;
};
BOOST_DESCRIBE_STRUCT(InstructionsMetrics, (), (mode, instructions, threshold_pct, machine_class, baseline_instructions, ratio, status))

/// The program a kernel would run on the TPU (the adapter's POST /v1/program): one part per
/// Mosaic body ("mosaic <function>") and one for the StableHLO around them ("stablehlo"),
/// parallel lists; the texts themselves are kept beside the results by hash (programs/<sha>.mlir).
struct ProgramMetrics {
    static constexpr CheckName kCheck = CheckName::Program;
    std::optional<std::string> target;  ///< the TPU generation lowered for
    std::optional<std::vector<std::string>> part_names, part_sha256;
    std::optional<std::vector<int64_t>> part_lines;
    std::optional<double> lower_s;  ///< seconds the adapter took to lower and decode
    // Against the reference (the program baseline, or side A).
    std::optional<std::string> against;
    std::optional<ProgramStatus> status;
    std::optional<std::vector<std::string>> changed_parts;
    std::optional<int64_t> lines_added, lines_removed;
    std::optional<std::string> diff;  ///< unified diff of the changed parts, cut at kProgramDiffLines
    std::optional<bool> stable_required;
};
BOOST_DESCRIBE_STRUCT(ProgramMetrics, (),
                      (target, part_names, part_sha256, part_lines, lower_s, against, status, changed_parts, lines_added,
                       lines_removed, diff, stable_required))

}  // namespace attngate
