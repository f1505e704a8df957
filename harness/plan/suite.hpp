// Suites: the JSON files in suites/ that list kernels and cases, parsed and validated with
// errors that name the file and the JSON path.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"

namespace attngate {

/// A kernel as a suite runs it: a registered kernel plus its tiling hints.
struct KernelSpec {
    std::string kernel;   ///< registered name
    int64_t block_q = 0;  ///< <= 0: kernel default
    int64_t block_k = 0;
    std::string json_path;  ///< where the suite names it, for errors
    /// "flash" or "flash[bq=64,bk=32]": unique within a suite.
    std::string label() const;
};

struct NanInjection {
    std::string tensor;  ///< "q", "k" or "v"
    std::array<int64_t, 4> index{};
};

/// A paged KV cache and a ragged batch (a case's "paged" object): sequence b has q_lens[b]
/// queries and kv_lens[b] keys, whose K and V lie in pages of page_size slots of a pool of
/// `pages` pages, reached through a page table (kernel_abi.h, attngate_paged_kv).
struct PagedSpec {
    std::vector<int64_t> q_lens;   ///< per sequence, in [1, kv_len]; 1 is a decode step
    std::vector<int64_t> kv_lens;  ///< per sequence, >= 1
    int64_t page_size = 16;
    int64_t pages = 0;        ///< pages in the pool, >= pages_needed()
    bool scattered = true;    ///< "scattered" (a seeded permutation) or "contiguous"

    int64_t pages_of(size_t b) const { return (kv_lens[b] + page_size - 1) / page_size; }
    int64_t pages_needed() const;   ///< pages the sequences hold
    int64_t pages_per_seq() const;  ///< the page table's row length: the longest sequence's pages
    int64_t total_q() const;        ///< the batch's query tokens
    int64_t max_kv() const;
    bool ragged() const;            ///< some q_len is not 1 (a prefill chunk among decode steps)
    /// True when some row of the page table has entries past the sequence's pages.
    bool has_padding() const;
};

struct CaseSpec {
    std::string id;
    int64_t batch = 1, seq_q = 0, seq_k = 0, heads_q = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;
    attngate_dtype dtype = ATTNGATE_DTYPE_F32;
    bool causal = false;
    bool top_left = false;  ///< causal_alignment "top_left": query i sits at key i (JAX, PyTorch)
    int64_t window_left = -1, window_right = -1;  ///< < 0: unbounded
    int64_t segments = 0;                         ///< 0: none; n: n packed segments
    bool segments_per_token = false;
    std::vector<int64_t> bias_shape;  ///< empty: no bias
    double softcap = 0.0;
    std::optional<double> scale;  ///< default 1/sqrt(head_dim)
    double qk_amplitude = 1.0;    ///< Q and K are drawn from U[-a, a)
    double v_amplitude = 1.0;
    double bias_amplitude = 1.0;
    std::optional<NanInjection> nan;  ///< paged: index [b, position in sequence b, h, d]
    /// A paged case: batch is the number of sequences, seq_q the batch's query tokens and
    /// seq_k the longest kv_len (kernel_abi.h); no bias, segments or top-left alignment.
    std::optional<PagedSpec> paged;
    std::vector<std::string> kernels;  ///< labels; empty: every suite kernel
    std::optional<int64_t> memory_calls;  ///< overrides the suite's
    std::optional<double> perf_threshold_pct;  ///< overrides the suite's
    std::optional<bool> bitwise_stable;        ///< overrides the suite's
    std::optional<bool> deterministic;         ///< overrides the suite's
    /// false: kept for correctness coverage only, never timed (nor priced) by the perf phase
    bool timed = true;

    float effective_scale() const;
    /// SHA-256 of what the golden depends on besides the inputs (CaseInputs::sha256): the
    /// scale, soft-cap, causal mask and its alignment, the window and the dtype. A golden
    /// records it, so that an edited mask or scale is a stale golden, not the kernels' drift.
    std::string rules_sha256() const;
    /// Host bytes a run of this case needs (inputs, outputs, golden, native's scores).
    int64_t estimated_bytes() const;
};

/// The perf gate's settings for a suite.
struct PerfSettings {
    int64_t repetitions = 15;     ///< samples per case x kernel (the U test needs >= 9)
    double min_time_s = 0.02;     ///< minimum time of one repetition
    double threshold_pct = 5.0;   ///< practical threshold on the median-time ratio
    double alpha = 0.01;          ///< after Benjamini-Hochberg over the run
    /// A kernel's first call (trace + compile) may grow this much over its baseline before
    /// the compile check fails: one sample per run, so the bar is wide (a doubling fails).
    double compile_threshold_pct = 50.0;
    std::vector<std::string> kernels;  ///< labels to time; empty: every kernel
    /// Strict mode for dedicated runners: a timed case x kernel the rule cannot gate (too
    /// noisy, too few repetitions, no baseline for this machine class) fails instead of skipping.
    bool require_verdict = false;
    /// num_threads the kernels are timed on ("perf.threads"); unset: the suite's `threads`.
    /// On a runner with as many vCPUs as kernel threads, every interruption of one thread
    /// holds the others up at the join: smoke times on 1 (docs/perf-gate.md#timing).
    std::optional<int> threads;
};

/// A race the TPU interpreter's contract check finds in a kernel, reviewed and accepted
/// ("known_races"): that race no longer fails the kernel's contract row, any other still does.
struct KnownRace {
    std::string kernel;    ///< the kernel's label
    std::string race;      ///< the race's signature, as the check prints it between backticks
    std::string reason;    ///< why it cannot change the kernel's result
    std::string reviewed;  ///< who reviewed it, and when
};

struct Suite {
    std::string name;
    std::filesystem::path file;
    uint64_t seed = 0;
    int64_t memory_budget_mb = 1024;
    int64_t memory_calls = 20;      ///< measured calls per case x kernel for the leak series
    int64_t warmup_calls = 2;       ///< calls before the series
    double timeout_s = 60.0;        ///< per case x kernel, when isolated
    double peak_growth_pct = 10.0;  ///< memory gate: allowed peak growth against baseline
    bool bitwise_stable = false;    ///< numerics: any bit that moves against the reference fails
    bool deterministic = false;     ///< numerics: outputs that differ between calls or processes fail
    bool program_stable = false;    ///< program: a TPU program that changed against its reference fails
    int64_t retention_limit_kb = 1024;  ///< memory: ABI bytes a kernel may keep from its first call on
    /// num_threads every kernel's init gets. Fixed (not the machine's core count) so that a
    /// threaded kernel's peak memory and outputs compare across machines; 0: every CPU.
    int threads = 2;
    PerfSettings perf;
    std::vector<KnownRace> known_races;
    std::vector<KernelSpec> kernels;
    std::vector<CaseSpec> cases;

    const CaseSpec *find_case(std::string_view id) const;
    /// The threads the perf phase times the kernels on: perf.threads, else threads.
    int timing_threads() const { return perf.threads.value_or(threads); }
};

/// Reads and validates a suite file.
Result<Suite> load_suite(const std::filesystem::path &path);
/// Validates a suite's text; `path` names it in messages and in Suite::file.
Result<Suite> parse_suite(std::string_view text, const std::filesystem::path &path);

const char *dtype_name(attngate_dtype d);

}  // namespace attngate
