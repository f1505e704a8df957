// Google Benchmark as a library: programmatic registration and a sample-keeping reporter.
#include "backend/timing.hpp"

#include <string>

#include <benchmark/benchmark.h>

namespace attngate {

namespace {

/// Keeps every iteration run (repetition), wall and CPU time, and nothing of the aggregates
/// or the console.
class SampleCollector : public benchmark::BenchmarkReporter {
public:
    explicit SampleCollector(size_t n) : samples_(n), cpu_(n) {}
    bool ReportContext(const Context &) override { return true; }
    void ReportRuns(const std::vector<Run> &runs) override {
        for (const auto &run : runs) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred || run.iterations <= 0) continue;
            const std::string &name = run.run_name.function_name;  // "r<index>"
            const size_t index = std::stoul(name.substr(1));
            if (index >= samples_.size()) continue;
            samples_[index].push_back(run.real_accumulated_time / static_cast<double>(run.iterations));
            cpu_[index].push_back(run.cpu_accumulated_time / static_cast<double>(run.iterations));
        }
    }
    std::vector<std::vector<double>> take() { return std::move(samples_); }
    std::vector<std::vector<double>> take_cpu() { return std::move(cpu_); }

private:
    std::vector<std::vector<double>> samples_, cpu_;
};

void initialize_once(bool random_interleaving) {
    static bool done = false;
    if (done) return;
    done = true;
    std::string interleave = std::string("--benchmark_enable_random_interleaving=") + (random_interleaving ? "true" : "false");
    std::string prog = "attngate";
    char *argv[] = {prog.data(), interleave.data(), nullptr};
    int argc = 2;
    benchmark::Initialize(&argc, argv);
}

}  // namespace

std::vector<std::vector<double>> time_calls(const std::vector<TimedCall> &requests, const TimingOptions &options,
                                            std::vector<std::vector<double>> *cpu_s) {
    initialize_once(options.random_interleaving);
    // One untimed call each first: page faults, lazy allocations and cold code would
    // otherwise land in the first repetition only.
    for (const auto &r : requests) r.call();
    benchmark::ClearRegisteredBenchmarks();
    for (size_t i = 0; i < requests.size(); ++i) {
        const auto &call = requests[i].call;
        auto *b = benchmark::RegisterBenchmark(("r" + std::to_string(i)).c_str(),
                                               [&call](benchmark::State &state) {
                                                   for (auto _ : state) call();
                                               })
                      ->Repetitions(options.repetitions)
                      ->UseRealTime()
                      ->MeasureProcessCPUTime()
                      ->ReportAggregatesOnly(false);
        if (requests[i].iterations > 0) b->Iterations(requests[i].iterations);
        else b->MinTime(options.min_time_s);
    }
    SampleCollector collector(requests.size());
    benchmark::RunSpecifiedBenchmarks(&collector);
    benchmark::ClearRegisteredBenchmarks();
    if (cpu_s) *cpu_s = collector.take_cpu();
    return collector.take();
}

}  // namespace attngate
