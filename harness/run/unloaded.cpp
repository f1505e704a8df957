// A run whose kernel sources did not all load (unloaded.hpp).
#include "run/unloaded.hpp"

#include "io/process.hpp"
#include "results/fingerprint.hpp"
#include "results/results_writer.hpp"
#include "run/sharding.hpp"

namespace attngate {

RunResults unloaded_results(const Suite &suite, std::vector<std::string> errors) {
    RunResults results;
    results.tool_version = tool_version();
    results.suite = suite.name;
    results.suite_file = suite.file.string();
    results.started_at = utc_timestamp();
    results.host_name = host_name();
    results.load_errors = std::move(errors);
    results.complete = true;
    return results;
}

Result<RunResults> unloaded_results(const Suite &suite, const RunOptions &options, std::vector<CheckName> checks,
                                    const Backends &backends, std::vector<std::string> errors) {
    auto fingerprint = collect_fingerprint(backends.kernels(), backends.fingerprint(), options.lockfiles);
    if (!fingerprint) return std::unexpected(fingerprint.error());
    RunResults results = unloaded_results(suite, std::move(errors));
    results.checks = std::move(checks);
    results.fingerprint = std::move(*fingerprint);
    if (options.shard) results.shard = unplanned_shard(*options.shard, ShardUnit::Run);
    ResultsWriter writer(options.results_path);
    if (auto w = writer.save(results); !w) return std::unexpected(w.error());
    return results;
}

}  // namespace attngate
