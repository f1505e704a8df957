// Google Benchmark JSON reporter.
#include "report/gbench.hpp"

#include <thread>

#include "io/json_io.hpp"

namespace attngate {

std::string gbench_serialize(const RunResults &r) {
    json::array benchmarks;
    int64_t family = 0;
    for (const auto &c : r.results) {
        for (const auto &check : c.checks) {
            const PerfMetrics *perf = check.get<PerfMetrics>();
            if (!perf || !perf->samples_s) continue;
            const std::string name = c.case_id + "/" + c.kernel;
            const Seconds &s = *perf->samples_s;
            for (size_t i = 0; i < s.size(); ++i) {
                const double ns = s[i] * 1e9;
                benchmarks.push_back(json::object{{"name", name},
                                                  {"family_index", family},
                                                  {"per_family_instance_index", 0},
                                                  {"run_name", name},
                                                  {"run_type", "iteration"},
                                                  {"repetitions", s.size()},
                                                  {"repetition_index", i},
                                                  {"threads", 1},
                                                  {"iterations", 1},
                                                  {"real_time", ns},
                                                  {"cpu_time", ns},
                                                  {"time_unit", "ns"}});
            }
            ++family;
        }
    }
    const json::object context{{"date", r.started_at},
                               {"executable", r.tool_version},
                               {"num_cpus", std::thread::hardware_concurrency()},
                               {"mhz_per_cpu", 0},
                               {"cpu_scaling_enabled", false},
                               {"caches", json::array()},
                               {"library_build_type", "release"},
                               {"attngate_suite", r.suite}};
    return pretty_json(json::object{{"context", context}, {"benchmarks", benchmarks}});
}

}  // namespace attngate
