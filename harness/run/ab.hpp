// Paired A/B of two sides on the same machine: two attngate builds (each kept running as a
// timing server; each case x kernel is timed on A and B back to back, order alternating,
// so machine drift hits both sides alike), an older build spawned per round, or two
// adapters kept up for the whole run (e.g. two jax releases). With max_rounds above
// rounds, rounds are sequential: a row whose verdict more pairs could still change gets
// more of them, up to max_rounds, each look judged at Bonferroni's share. Each case x kernel
// is judged on its paired timings (perf), its outputs diffed bit for bit (numerics), B's
// output against the golden (and A's, as information), B's memory (leaks, workspace
// promise, its peak against A's), and B's first-call time against A's (compile).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "results/results.hpp"
#include "run/ab_sides.hpp"
#include "stats/perf_decision.hpp"
#include "store/store.hpp"

namespace attngate {

struct AbOptions {
    int rounds = 13;      ///< paired rounds over every row
    int max_rounds = 61;  ///< > rounds: rows still undecided after `rounds` get more, up to this; else fixed rounds
    AbRoundOptions round;
    DecisionPolicy policy;
    Store *store = nullptr;  ///< goldens, when the suite has them (required)
    double compile_threshold_pct = 50.0;
    bool bitwise = false;  ///< any bit that moves between the sides fails
    std::filesystem::path profiles_dir;  ///< both sides' traces of a slower case go here; empty: none
    bool strict = false;  ///< a case the rule cannot gate (too noisy) fails
};

/// How far an A/B run is. A step is one row timed on both sides (a whole round when a side
/// times only whole rounds); `total` counts the steps planned so far, and grows when
/// sequential rounds give the undecided rows more.
struct AbProgress {
    size_t done = 0, total = 0;
    int round = 0;   ///< the round under way, 1-based
    int rounds = 0;  ///< the last round planned so far
};

/// Called at the start of each round and after each step.
using AbProgressFn = std::function<void(const AbProgress &)>;

/// Runs the rounds and returns results (B against A) with perf, numerics, golden, memory
/// and compile checks per case x kernel.
Result<RunResults> run_ab(const Suite &suite, AbSide &a, AbSide &b, const AbOptions &options, const AbProgressFn &progress);

/// The verdict an A/B run's closing line says, decided as its exit code is (RunResults::
/// verdict()): "FAILED: " and what failed (perf regressions, each other check's failures,
/// errors), else "passed: no regression", adding the case x kernels too noisy to gate.
std::string ab_verdict_line(const RunResults &results);

}  // namespace attngate
