// A run's program rows: the TPU program of an adapter kernel against the program baseline or
// the last run, its texts kept beside the results.
#pragma once

#include <filesystem>
#include <string>

#include "backend/observation.hpp"
#include "results/results.hpp"
#include "store/baseline_store.hpp"
#include "store/store.hpp"

namespace attngate {

/// What a run's program checks read and where they keep texts.
struct ProgramContext {
    std::filesystem::path results_dir;   ///< texts go to results_dir/programs/<sha>.mlir
    Store *store = nullptr;              ///< an accepted baseline's texts: programs/<sha>.mlir
    const BaselineFile *baselines = nullptr;  ///< program/<suite>.json; null: none
    const RunResults *previous = nullptr;     ///< the last run at the same --out; null: none
    bool stable = false;                 ///< the suite's program_stable
};

/// Keeps the program's texts beside the results and checks it against the baseline, or else
/// the last run (a text that cannot be written makes the row a skip saying why).
CheckResult program_row_check(const ProgramContext &ctx, const std::string &case_id, const std::string &kernel, ProgramObservation &p);

}  // namespace attngate
