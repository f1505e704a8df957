// What a check keeps in its baseline: a record per check whose fields are namesakes of the
// check's metrics (copy_namesakes checks that at compile time), in the order baseline
// files have always listed them. Only the baseline reader and writer turn them into JSON.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "io/json_describe.hpp"
#include "results/check_metrics.hpp"

namespace attngate {

struct MemoryBaseline {
    static constexpr CheckName kCheck = CheckName::Memory;
    std::optional<int64_t> abi_peak_bytes, rss_peak_delta_bytes;
    std::optional<double> leak_bytes_per_call;
    /// The number people compare old -> new.
    std::optional<double> headline() const { return abi_peak_bytes ? std::optional<double>(static_cast<double>(*abi_peak_bytes)) : std::nullopt; }
    /// Whether an exact value moved from `stored` (nullopt: none is exact, the check's verdict
    /// tells). The ABI's peak is exact; the RSS delta moves by pages from run to run.
    std::optional<bool> moved_from(const MemoryBaseline &stored) const { return abi_peak_bytes != stored.abi_peak_bytes; }
};
BOOST_DESCRIBE_STRUCT(MemoryBaseline, (), (abi_peak_bytes, rss_peak_delta_bytes, leak_bytes_per_call))

struct PerfBaseline {
    static constexpr CheckName kCheck = CheckName::Perf;
    std::optional<Seconds> samples_s;
    std::optional<double> median_s, mad_s, tokens_per_s, gflops;
    std::optional<Seconds> calibration_s, parallel_calibration_s;
    std::optional<std::string> calibration_workload;
    std::optional<int64_t> threads;  ///< the kernel threads it was timed on; absent: the suite's `threads`
    std::optional<double> headline() const { return median_s; }
    std::optional<bool> moved_from(const PerfBaseline &) const { return std::nullopt; }  // timings differ on every run
};
BOOST_DESCRIBE_STRUCT(PerfBaseline, (),
                      (samples_s, median_s, mad_s, tokens_per_s, gflops, calibration_s, parallel_calibration_s, calibration_workload, threads))

struct CompileBaseline {
    static constexpr CheckName kCheck = CheckName::Compile;
    std::optional<double> compile_s;
    std::optional<double> headline() const { return compile_s; }
    std::optional<bool> moved_from(const CompileBaseline &) const { return std::nullopt; }  // a timing
};
BOOST_DESCRIBE_STRUCT(CompileBaseline, (), (compile_s))

/// One call's instructions under callgrind (--perf-metric instructions).
struct InstructionsBaseline {
    static constexpr CheckName kCheck = CheckName::Instructions;
    std::optional<double> instructions;
    std::optional<double> headline() const { return instructions; }
    std::optional<bool> moved_from(const InstructionsBaseline &stored) const { return instructions != stored.instructions; }
};
BOOST_DESCRIBE_STRUCT(InstructionsBaseline, (), (instructions))

/// The accepted output's sketch (numerics_check.hpp's OutputSketch).
struct NumericsBaseline {
    static constexpr CheckName kCheck = CheckName::Numerics;
    std::optional<std::string> sha256;
    std::optional<int64_t> elements;
    std::optional<std::vector<uint32_t>> sample_bits;
    std::optional<double> headline() const { return elements ? std::optional<double>(static_cast<double>(*elements)) : std::nullopt; }
    std::optional<bool> moved_from(const NumericsBaseline &stored) const { return sha256 != stored.sha256 || elements != stored.elements; }
};
BOOST_DESCRIBE_STRUCT(NumericsBaseline, (), (sha256, elements, sample_bits))

/// The accepted TPU program's hashes; its texts are in the store by hash (programs/<sha>.mlir).
struct ProgramBaseline {
    static constexpr CheckName kCheck = CheckName::Program;
    std::optional<std::string> target;
    std::optional<std::vector<std::string>> part_names, part_sha256;
    std::optional<std::vector<int64_t>> part_lines;
    std::optional<double> headline() const { return part_lines ? std::optional<double>(static_cast<double>(part_lines->size())) : std::nullopt; }
    std::optional<bool> moved_from(const ProgramBaseline &stored) const { return part_sha256 != stored.part_sha256; }
};
BOOST_DESCRIBE_STRUCT(ProgramBaseline, (), (target, part_names, part_sha256, part_lines))

/// A baseline entry's values; which alternative is the baseline file's check.
using BaselineValues = std::variant<MemoryBaseline, PerfBaseline, CompileBaseline, InstructionsBaseline, NumericsBaseline, ProgramBaseline>;

/// Empty values of the check's kind; nullopt for a check that keeps no baseline.
inline std::optional<BaselineValues> empty_baseline_values(CheckName check) {
    std::optional<BaselineValues> out;
    boost::mp11::mp_for_each<boost::mp11::mp_rename<BaselineValues, boost::mp11::mp_list>>([&](auto v) {
        if (decltype(v)::kCheck == check) out = v;
    });
    return out;
}

}  // namespace attngate
