// Google Benchmark as a library: programmatic registration and a sample-keeping reporter.
#include "backend/timing.hpp"

#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "io/error.hpp"

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

/// Every flag of Google Benchmark 1.7 given on its command line: the library reads each
/// unset one from a BENCHMARK_* environment variable (BENCHMARK_FILTER=x timed nothing;
/// an unwritable BENCHMARK_OUT made it exit(1)), and the caller's environment must not
/// decide what is timed.
std::vector<std::string> benchmark_flags(bool random_interleaving) {
    return {"attngate",
            "--benchmark_list_tests=false",
            "--benchmark_filter=.",
            "--benchmark_min_time=0.5",
            "--benchmark_min_warmup_time=0",
            "--benchmark_repetitions=1",
            std::string("--benchmark_enable_random_interleaving=") + (random_interleaving ? "true" : "false"),
            "--benchmark_report_aggregates_only=false",
            "--benchmark_display_aggregates_only=false",
            "--benchmark_format=console",
            "--benchmark_out=",
            "--benchmark_out_format=json",
            "--benchmark_color=false",
            "--benchmark_counters_tabular=false",
            "--benchmark_perf_counters=",
            "--benchmark_context=",
            "--benchmark_time_unit=ns",
            "--v=0"};
}

void initialize_once(bool random_interleaving) {
    static bool done = false;
    if (done) return;
    done = true;
    std::vector<std::string> flags = benchmark_flags(random_interleaving);
    std::vector<char *> argv;
    for (auto &f : flags) argv.push_back(f.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(flags.size());
    benchmark::Initialize(&argc, argv.data());
    // Initialize removes what it recognised: anything left is a flag this library version
    // does not know, and it would have been read from the environment instead.
    ATTNGATE_CHECK(argc == 1);
}

/// Counts the repetitions Google Benchmark times. A request's first repetition calls it
/// with growing iteration counts while it estimates how many calls min_time_s takes, and
/// every later one calls it once with the count it settled on: so each call at the
/// request's current count is one repetition more, and one at a new count is the first.
class RepetitionCounter {
public:
    RepetitionCounter(size_t requests, int repetitions, std::function<void(size_t)> on_repetition)
        : runs_(requests), repetitions_(repetitions), on_repetition_(std::move(on_repetition)) {}
    void ran(size_t request, int64_t iterations) {
        Runs &r = runs_[request];
        const bool more = r.done == 0 || (iterations == r.iterations && r.done < repetitions_);
        r.iterations = iterations;
        if (!more || !on_repetition_) return;
        ++r.done;
        on_repetition_(request);
    }

private:
    struct Runs {
        int64_t iterations = 0;
        int done = 0;
    };
    std::vector<Runs> runs_;
    int repetitions_;
    std::function<void(size_t)> on_repetition_;
};

}  // namespace

std::vector<std::vector<double>> time_calls(const std::vector<TimedCall> &requests, const TimingOptions &options,
                                            std::vector<std::vector<double>> *cpu_s) {
    initialize_once(options.random_interleaving);
    // One untimed call each first: page faults, lazy allocations and cold code would
    // otherwise land in the first repetition only.
    for (const auto &r : requests) r.call();
    benchmark::ClearRegisteredBenchmarks();
    RepetitionCounter counter(requests.size(), options.repetitions, options.on_repetition);
    for (size_t i = 0; i < requests.size(); ++i) {
        const auto &call = requests[i].call;
        auto *b = benchmark::RegisterBenchmark(("r" + std::to_string(i)).c_str(),
                                               [&call, &counter, i](benchmark::State &state) {
                                                   for (auto _ : state) call();
                                                   counter.ran(i, static_cast<int64_t>(state.iterations()));
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
