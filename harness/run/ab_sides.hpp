// The two sides of a paired A/B run. A side is either another attngate build (a command
// line whose `time --serve` stays up for the run; an older build's `time` is spawned once
// per round) or a set of resident backends (adapters started once, e.g. two JAX virtual
// environments): both answer "time this case x kernel (or every one) once more" and
// "hand me every output".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// (case id, kernel label)
using AbLabel = std::pair<std::string, std::string>;

/// One case x kernel's output from one side, and its first-call time when known.
struct AbOutput {
    std::vector<float> values;
    std::optional<double> compile_s;
    DeclaredRounding rounding;  ///< what the kernel declares it rounds (the golden check allows for it)
    std::string error;  ///< non-empty: no output, and why
    std::optional<ProgramObservation> program;  ///< the TPU program, where the side's host lowers it
    /// Its memory over the suite's memory calls, when asked (AbRoundOptions::memory) and the
    /// side observed it; else memory_unavailable may say why not.
    std::optional<MemoryObservation> memory;
    uint32_t workspace_growth = 0;  ///< the kernel's workspace promise on this side (attngate_workspace_growth)
    std::string memory_unavailable;
};

struct AbRoundOptions {
    int samples = 3;  ///< a side's time in a round is the median of this many
    double min_time_s = 0.02;
    double timeout_s = 600.0;
    bool memory = false;  ///< outputs() also observes each row's memory over the suite's memory calls
};

class AbSide {
public:
    virtual ~AbSide() = default;
    virtual std::string describe() const = 0;
    /// Times every case x kernel once more: seconds per call (median of the round's samples).
    virtual Result<std::map<AbLabel, double>> round(const AbRoundOptions &o) = 0;
    /// The case x kernels this side can time one at a time (time_row), so that the two
    /// sides alternate row by row; empty: it times whole rounds only.
    virtual Result<std::vector<AbLabel>> rows(const AbRoundOptions & /*o*/) { return std::vector<AbLabel>{}; }
    /// One sample of one of rows(): seconds per call.
    virtual Result<double> time_row(const AbLabel &label, const AbRoundOptions & /*o*/) {
        return fail(ErrorKind::Usage, "{}: cannot time {} / {} alone", describe(), label.first, label.second);
    }
    /// Every case x kernel's output, computed once (with its memory, when o.memory).
    virtual Result<std::map<AbLabel, AbOutput>> outputs(const AbRoundOptions &o) = 0;
    /// This side's fingerprint, for the results' "What changed": a build's own (its `env
    /// --json`: compiler, flags, the libraries it loads), an adapter's versions; an error
    /// when the side cannot say within timeout_s.
    virtual Result<json::object> fingerprint(double /*timeout_s*/) { return json::object{}; }
    /// A profiler trace of one case x kernel saved under dir; an error when the side has none.
    virtual Result<std::filesystem::path> profile(const AbLabel &label, const std::filesystem::path & /*dir*/) {
        return fail(ErrorKind::Usage, "{}: no profiler for {} / {}", describe(), label.first, label.second);
    }
};

/// What one side of an A/B runs: a build of attngate and the kernel sources and lock files
/// that are this side's own (two builds of a team's plugin, two venvs of its adapter).
struct AbSideSpec {
    std::string build;                   ///< an attngate binary, a build directory or a command line; empty: this attngate
    std::vector<std::string> plugins;    ///< the side's --plugin files (those both sides load included)
    std::vector<std::string> adapters;   ///< the side's --adapter command lines
    std::vector<std::string> lockfiles;  ///< recorded in the side's fingerprint
    /// How results and the console name the side; empty: its command line.
    std::string name;
};

/// A build side: `<build> time --serve --suite SUITE ...` kept running for the whole run
/// and timed row by row (a build older than --serve: `<build> time ...` spawned once per
/// round), without a shell; a directory means DIR/attngate. Its `time` and `env --json`
/// get the side's plugins, adapters and lock files; `time` gets the filter's kernels and
/// cases.
std::unique_ptr<AbSide> build_side(const AbSideSpec &side, const std::filesystem::path &suite_file, const PlanFilter &filter);

/// Backends that stay up for the whole A/B run (adapters): timed and run in-process. Its
/// fingerprint is collected here, with these lock files. An error when the suite and filter
/// plan nothing of these backends' own kernels (the built-ins are left out: both sides
/// share them).
Result<std::unique_ptr<AbSide>> backend_side(std::string name, std::unique_ptr<Backends> backends, const Suite &suite,
                                             const PlanFilter &filter, std::vector<std::string> lockfiles);

/// Bad input (ErrorKind::Usage) named with `flag` when a side's build cannot be run: a
/// directory without DIR/attngate, a path that is not an executable file, or a command line
/// whose program is neither a file nor on PATH.
Result<void> check_build_command(const std::string &side, const std::string &flag);

/// "DIR/attngate" for a build directory, else the argument.
std::string ab_command(const std::string &side);


}  // namespace attngate
