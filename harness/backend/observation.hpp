// What a backend saw when it ran a kernel on a case: plain data that checks read. No
// kernel calls and no backend behind it, so a check never depends on how a kernel is
// hosted (in this process, in a forked child, or behind an adapter over HTTP).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attngate {

/// Memory seen over repeated calls. Each eye is optional: "not measured" is never 0.
struct MemoryObservation {
    int64_t calls = 0;  ///< warm-up plus measured calls
    // The ABI allocator (in-process kernels): every byte the kernel asked the harness for.
    bool abi_measured = false;
    int64_t abi_peak_bytes = 0;           ///< most bytes the kernel held in one call
    int64_t abi_leaked_bytes = 0;         ///< bytes never handed back over the measured calls
    int64_t abi_unfreed_allocations = 0;
    int64_t abi_retained_bytes = 0;       ///< bytes held from the first call on and never given back
    // Series, one element per measured call (empty: not measured).
    std::vector<int64_t> heap_live_bytes;    ///< process heap in use (malloc/new)
    std::vector<int64_t> rss_bytes;          ///< resident set size of the kernel's process
    std::vector<int64_t> live_arrays;        ///< a remote runtime's live array count (jax.live_arrays)
    std::vector<int64_t> live_array_bytes;   ///< ... and their bytes
    std::vector<int64_t> device_bytes_in_use;  ///< a device allocator's bytes in use
    int64_t rss_peak_delta_bytes = -1;     ///< peak RSS growth during one call; -1: not measured
    int64_t device_peak_bytes = -1;        ///< a device allocator's peak; -1: not measured
    int64_t probe_seq_q = 0, probe_seq_k = 0;   ///< the growth probe's lengths (0: no probe)
    int64_t probe_abi_peak_bytes = -1;
    int64_t probe_rss_peak_delta_bytes = -1;
};

/// How a kernel's host ended when it did not hand back an observation.
struct CrashInfo {
    std::string kind;    ///< "crash", "timeout", "exit" or "lost" (a remote host went away)
    std::string signal;  ///< e.g. "SIGSEGV"; empty when it exited
    int exit_code = 0;
    double seconds = 0.0;
    std::string stderr_tail;  ///< the last lines the kernel wrote to stderr
    std::string message;      ///< for "lost": what the connection said
    std::string describe() const;
};


/// How a kernel's outputs for the same inputs disagree.
struct Nondeterminism {
    std::string across;         ///< "calls" (in one process) or "processes"
    int64_t elements = 0;       ///< elements whose bits differ
    double max_abs = 0.0;       ///< largest |a - b| over finite pairs
    bool reads_output = false;  ///< the output follows the output buffer's initial contents
};

/// Which kind of unreadable slot of a paged case a kernel's NaN outputs came from: outputs
/// that are NaN on the case's inputs and finite when that kind of slot holds finite values.
struct UnreadableReads {
    int64_t past_kv_len = 0;    ///< NaN outputs the slots past kv_len caused ("read past kv_len")
    int64_t outside_table = 0;  ///< ... the pages no table holds caused ("read a page outside its table")
    int64_t first_past_kv_len = -1, first_outside_table = -1;  ///< their first output element
};

/// One part of a kernel's TPU program: a Mosaic body or the StableHLO around them.
struct ProgramPart {
    std::string kind;  ///< "mosaic" or "stablehlo"
    std::string name;  ///< the Mosaic function, or "stablehlo"
    std::string sha256;
    int64_t lines = 0;
    std::string text;  ///< MLIR text without locations
    std::string label() const { return kind == name ? kind : kind + " " + name; }
};

/// The program the kernel would run on the TPU, lowered by its host without running it.
struct ProgramObservation {
    std::string target;       ///< the TPU generation lowered for
    std::string unavailable;  ///< non-empty: no program, and why (no endpoint, does not lower)
    std::vector<ProgramPart> parts;
    double seconds = 0.0;
};

struct Observation {
    std::vector<float> output;  ///< [B, Sq, Hq, Dv]
    int kernel_rc = 0;          ///< non-zero: the kernel reported an error
    std::string kernel_error;
    std::string unsupported;    ///< non-empty: the kernel declined the case at run time
    std::string host_error;     ///< non-empty: the kernel's host failed outside the kernel (init, protocol)
    double seconds = 0.0;       ///< wall time of the first call
    /// First-call (trace + compile) time, when the host reports one: its CPU time where the
    /// host measures that (stable under load), else wall time.
    std::optional<double> compile_s;
    std::optional<MemoryObservation> memory;
    std::optional<CrashInfo> crash;  ///< set when the kernel crashed, hung or its host was lost
    /// Breaches of the ABI's contract seen around the calls: a write to an input, a write
    /// outside the output or an ABI allocation, a free of a pointer it was not given.
    std::vector<std::string> contract_violations;
    bool contract_watched = false;  ///< the host watched inputs, guards and poison (in-process)
    std::optional<Nondeterminism> nondeterminism;
    /// Paged cases in process, when the output held a NaN: which unreadable slots it came from.
    std::optional<UnreadableReads> unreadable;
    std::optional<ProgramObservation> program;  ///< asked for (ObserveRequest::program) and the host can lower
};

}  // namespace attngate
