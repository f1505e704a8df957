// Timing a plan without any check, and writing its outputs: what `attngate time` (and
// `time --serve`, for every request of an A/B run) and `attngate ab` run on each side.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "io/files.hpp"
#include "plan/inputs.hpp"
#include "plan/plan.hpp"
#include "plan/suite.hpp"

namespace attngate {

/// One case x kernel's timing samples.
struct LabelledSamples {
    std::string case_id, kernel;
    std::vector<double> samples_s;
    std::optional<double> instructions;  ///< of one call, when counted instead of timed
};

/// The plan's case x kernels that the suite's perf settings select, with each case's inputs
/// generated once, timed as often as asked.
class PlanTimer {
public:
    PlanTimer(const Suite &suite, const Plan &plan, Backends &backends);
    size_t size() const { return rows_.size(); }
    /// (case, kernel) of each row, in row order.
    std::vector<std::pair<std::string, std::string>> labels() const;
    /// Times these rows (indices into labels()) without any check; an Infra error names the
    /// first row that did not run to a time.
    Result<std::vector<LabelledSamples>> time(const TimingRequest &timing, const std::vector<size_t> &which);

private:
    struct Row {
        const CaseSpec *spec;
        const PlannedKernel *kernel;
        Invocation inv;
    };
    Backends &backends_;
    std::vector<std::unique_ptr<CaseInputs>> inputs_;
    std::vector<Row> rows_;
};

/// Times the plan's case x kernels that the suite's perf settings select, without any
/// check: what `attngate time` prints for `attngate ab` to pair up.
Result<std::vector<LabelledSamples>> time_plan(const Suite &suite, const Plan &plan, Backends &backends,
                                               const TimingRequest &timing);

/// Runs every planned case x kernel once and writes its output to dir/<n>.npy, with
/// dir/index.json listing case, kernel, file (or error) and compile_s: what `ab` diffs.
/// With `memory`, each row that ran is also observed over the suite's memory calls, and
/// its entry holds that observation (memory_to_json) and the kernel's workspace_growth
/// promise: what `ab` judges side B's memory by.
Result<void> write_plan_outputs(const Suite &suite, const Plan &plan, Backends &backends, const std::filesystem::path &dir,
                                bool isolation, bool memory);

/// What write_plan_outputs leaves: how a directory of earlier outputs is known (its index.json).
inline constexpr OutputDir kPlanOutputsDir{"`attngate time --outputs`", "index.json", {"[\n  {\n    \"case\": ", "\"kernel\": ", "[]\n"}, ".npy"};

}  // namespace attngate
