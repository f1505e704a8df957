// The results model: what a run found, per case x kernel x check. results.json is its
// serialised form and the single source for every reporter.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// 2 added the "error" verdict; version 1 files are still read (see results_from_json).
inline constexpr int kResultsSchemaVersion = 2;

/// Fail is drift (the kernel ran and its answer or cost moved); Error is a kernel that did
/// not run to an answer (a crash, a hang, an error it returned). Both fail the gate (exit
/// 1), and every report keeps them apart, as JUnit's <failure> and <error> do.
enum class Verdict { Pass, Fail, Skip, Error };
const char *verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view s);

/// True for the verdicts that fail the gate (Fail and Error).
inline bool is_failing(Verdict v) { return v == Verdict::Fail || v == Verdict::Error; }

/// One check's verdict on one case x kernel. Checks fill metrics with their own numbers.
struct CheckResult {
    std::string check;  ///< "golden", later "memory", "perf", "cost"
    Verdict verdict = Verdict::Pass;
    std::string reason;  ///< one line a person reads
    json::object metrics;
    std::vector<std::string> notes;  ///< information, never a failure
};

struct CaseResult {
    std::string case_id;
    std::string kernel;  ///< the suite's label, e.g. flash[bq=64,bk=32]
    std::string kernel_version;
    std::string kernel_origin;  ///< "built-in", a plugin's path or an adapter's URL
    json::object params;  ///< the case's shape and switches, for reports
    std::vector<CheckResult> checks;
    std::string output_sha256;
    double seconds = 0.0;
    std::optional<double> compile_s;  ///< first call's trace + compile time, when the host reports one

    /// Error if any check errored, else Fail if any check failed, Skip if every check
    /// skipped, else Pass.
    Verdict verdict() const;
    /// The first erroring or failing check's reason (prefixed with the check), or the first reason.
    std::string reason() const;
};

struct RunResults {
    int schema_version = kResultsSchemaVersion;
    std::string tool_version;
    std::string suite;
    std::string suite_file;
    std::string started_at;  ///< UTC, ISO 8601
    std::vector<std::string> checks;  ///< which checks ran
    std::vector<CaseResult> results;
    bool complete = false;  ///< false while the run is still going (or crashed)
    json::object fingerprint;           ///< this run's dependency/environment fingerprint
    json::object baseline_fingerprint;  ///< the one the baselines were made with; empty when unknown
    json::array workloads;              ///< cost projections per workload profile, when the cost check ran
    std::string machine_class;          ///< the class perf baselines and history are kept per; empty when unknown
    json::object shard;                 ///< for one shard of a sharded run: which, and the whole plan (see merge.hpp)
    json::object ab;                    ///< for an A/B run: the sides' command lines ("a", "b"), not part of any fingerprint
    std::string host_name;              ///< the machine that ran it; empty when unknown

    /// Fail when any case x kernel failed or errored, or a workload failed; else Pass.
    Verdict verdict() const;
    const CaseResult *find(std::string_view case_id, std::string_view kernel) const;
};

json::value to_json(const RunResults &r);
Result<RunResults> results_from_json(const json::value &v, const std::string &file);
Result<RunResults> load_results(const std::filesystem::path &path);
Result<void> save_results(const RunResults &r, const std::filesystem::path &path);

}  // namespace attngate
