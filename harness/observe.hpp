// Observing a kernel on one case: its output, and (when asked) its memory over repeated
// calls, including a probe at twice the sequence length to hold the kernel to its
// workspace promise. Produces data only; checks judge it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "inputs.hpp"
#include "json_io.hpp"
#include "plan.hpp"
#include "suite.hpp"

namespace attngate {

struct ObserveOptions {
    bool memory = false;
    int64_t warmup_calls = 2;   ///< calls before the measured series
    int64_t memory_calls = 20;  ///< measured calls (N)
    int64_t memory_budget_bytes = int64_t{1} << 30;  ///< skip the growth probe past this
};

struct MemoryObservation {
    int64_t calls = 0;
    int64_t abi_peak_bytes = 0;           ///< most bytes the kernel held from the ABI allocator in one call
    int64_t abi_leaked_bytes = 0;         ///< ABI bytes never handed back, over all calls
    int64_t abi_unfreed_allocations = 0;
    std::vector<int64_t> heap_live_bytes;  ///< process heap in use after each measured call
    std::vector<int64_t> rss_bytes;        ///< resident set size after each measured call
    int64_t rss_peak_delta_bytes = -1;     ///< peak RSS growth during one call; -1: not measured
    int64_t probe_seq_q = 0, probe_seq_k = 0;   ///< the growth probe's lengths (0: no probe)
    int64_t probe_abi_peak_bytes = -1;
    int64_t probe_rss_peak_delta_bytes = -1;
};

/// How a child process ended when it did not hand back an observation.
struct CrashInfo {
    std::string kind;  ///< "crash", "timeout" or "exit"
    std::string signal;  ///< e.g. "SIGSEGV"; empty when it exited
    int exit_code = 0;
    double seconds = 0.0;
    std::string stderr_tail;  ///< the last lines the kernel wrote to stderr
    std::string describe() const;
};

struct Observation {
    std::vector<float> output;
    int kernel_rc = 0;
    std::string kernel_error;
    double seconds = 0.0;  ///< wall time of the first call
    std::optional<MemoryObservation> memory;
    std::optional<CrashInfo> crash;  ///< set when the kernel crashed, hung or exited
};

/// Runs the kernel on the case in this process.
Observation observe(const CaseSpec &c, const CaseInputs &in, const PlannedKernel &k, const Suite &suite,
                    const ObserveOptions &options);

/// The case at twice its sequence lengths (bias and segment shapes follow).
CaseSpec doubled_sequences(const CaseSpec &c);

/// Serialisation for the trip from an isolated child back to the parent.
std::string serialize_observation(const Observation &o);
/// Parses what serialize_observation wrote; nullopt when truncated or malformed.
std::optional<Observation> parse_observation(std::string_view bytes);

}  // namespace attngate
