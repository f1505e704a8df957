// Google Benchmark JSON reporter: what `--benchmark_format=json` (1.7) writes, from what was
// measured only. A field attngate does not know (the iterations of a repetition, the CPU's
// frequency and scaling) is left out, not made up.
#include "report/gbench.hpp"

#include "io/json_io.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

/// The fields every row of one benchmark shares.
json::object row(const std::string &name, int64_t family, size_t repetitions, const char *run_type) {
    return json::object{{"name", name},     {"family_index", family}, {"per_family_instance_index", 0},
                        {"run_name", name}, {"run_type", run_type},   {"repetitions", repetitions},
                        {"threads", 1},     {"time_unit", "ns"}};
}

/// mean, median, stddev and cv over the repetitions, as Google Benchmark's own aggregates.
void add_aggregates(json::array &out, const std::string &name, int64_t family, const std::vector<double> &real_ns,
                    const std::vector<double> &cpu_ns) {
    struct Aggregate {
        const char *name;
        double (*of)(const std::vector<double> &);
        const char *unit;
    };
    static const Aggregate kAggregates[] = {
        {"mean", [](const std::vector<double> &v) { return mean(v); }, "time"},
        {"median", [](const std::vector<double> &v) { return median(v); }, "time"},
        {"stddev", [](const std::vector<double> &v) { return stddev(v); }, "time"},
        {"cv", [](const std::vector<double> &v) { return mean(v) > 0 ? stddev(v) / mean(v) : 0.0; }, "percentage"}};
    for (const auto &a : kAggregates) {
        const bool spread = a.name == std::string_view("stddev") || a.name == std::string_view("cv");
        if (spread && real_ns.size() < 2) continue;  // one sample has no spread
        json::object o = row(name + "_" + a.name, family, real_ns.size(), "aggregate");
        o["run_name"] = name;
        o["aggregate_name"] = a.name;
        o["aggregate_unit"] = a.unit;
        o["iterations"] = real_ns.size();  // Google Benchmark's count for an aggregate: its repetitions
        o["real_time"] = a.of(real_ns);
        if (!cpu_ns.empty()) o["cpu_time"] = a.of(cpu_ns);
        out.push_back(std::move(o));
    }
}

/// What the run knows of the machine that measured: its host, its CPU count, the library.
json::object context(const RunResults &r) {
    json::object c{{"date", r.started_at}, {"executable", "attngate " + r.tool_version}, {"json_schema_version", 1},
                   {"attngate_suite", r.suite}};
    if (!r.host_name.empty()) c["host_name"] = r.host_name;
    if (const auto *cpu = r.fingerprint.if_contains("cpu"); cpu && cpu->is_object())
        if (const auto *n = cpu->get_object().if_contains("cores"); n && n->is_int64()) c["num_cpus"] = n->get_int64();
    if (const auto *lib = r.fingerprint.if_contains("libraries"); lib && lib->is_object())
        if (const auto *v = lib->get_object().if_contains("google_benchmark"); v && v->is_string()) c["library_version"] = *v;
    return c;
}

}  // namespace

std::string gbench_serialize(const RunResults &r) {
    json::array benchmarks;
    int64_t family = 0;
    for (const auto &c : r.results) {
        for (const auto &check : c.checks) {
            const PerfMetrics *perf = check.get<PerfMetrics>();
            if (!perf || !perf->samples_s || perf->samples_s->empty()) continue;
            std::vector<double> real = *perf->samples_s, cpu = perf->cpu_samples_s.value_or(Seconds{});
            if (cpu.size() != real.size()) cpu.clear();  // not measured (an adapter): no cpu_time
            for (auto *v : {&real, &cpu})
                for (double &x : *v) x *= 1e9;
            const std::string name = c.case_id + "/" + c.kernel;
            for (size_t i = 0; i < real.size(); ++i) {
                json::object o = row(name, family, real.size(), "iteration");
                o["repetition_index"] = i;
                o["real_time"] = real[i];
                if (!cpu.empty()) o["cpu_time"] = cpu[i];
                benchmarks.push_back(std::move(o));
            }
            add_aggregates(benchmarks, name, family, real, cpu);
            ++family;
        }
    }
    return pretty_json(json::object{{"context", context(r)}, {"benchmarks", benchmarks}});
}

}  // namespace attngate
