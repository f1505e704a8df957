// Timing a plan without checks, and writing its outputs for an A/B diff.
#include "run/plan_timer.hpp"

#include <numeric>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"
#include "run/perf_targets.hpp"
#include "run/run.hpp"
#include "backend/observe.hpp"

namespace attngate {

Result<void> write_plan_outputs(const Suite &suite, const Plan &plan, Backends &backends, const std::filesystem::path &dir,
                                bool isolation, bool memory) {
    json::array index;
    size_t n = 0;
    for (const auto &pc : plan.cases) {
        const CaseInputs in = generate_inputs(suite, *pc.spec);
        for (const PlannedKernel *k : pc.kernels) {
            const Invocation inv{&suite, pc.spec, &in, &k->spec};
            json::object entry{{"case", pc.spec->id}, {"kernel", k->spec.label()}};
            Backend *b = backends.host_of(k->spec.kernel);
            std::string why = missing_features(*k->info, *pc.spec);
            if (why.empty()) why = b->unsupported(inv, suite.timeout_s);
            Observation o;
            if (why.empty()) {
                ObserveRequest req;
                req.isolation = isolation;
                req.timeout_s = suite.timeout_s;
                if (memory) ask_memory(req, suite, *pc.spec);
                o = b->observe(inv, req);
            }
            if (!why.empty()) entry["error"] = "skipped: " + why;
            else if (o.crash) entry["error"] = o.crash->describe();
            else if (!o.unsupported.empty()) entry["error"] = "skipped: unsupported: " + o.unsupported;
            else if (!o.host_error.empty()) entry["error"] = o.host_error;
            else if (o.kernel_rc != 0) entry["error"] = fmt::format("kernel returned error {}: {}", o.kernel_rc, o.kernel_error);
            else {
                const std::string file = fmt::format("{}.npy", n++);
                if (auto w = write_file_atomic(dir / file, serialize_npy(make_npy(std::span<const float>(o.output), output_shape(*pc.spec)))); !w)
                    return w;
                entry["file"] = file;
            }
            if (o.compile_s) entry["compile_s"] = *o.compile_s;
            if (o.memory && entry.contains("file")) {
                entry["memory"] = memory_to_json(*o.memory);
                entry["workspace_growth"] = k->info->workspace_growth;
            }
            if (k->info->rounding.output) entry["rounds_output"] = true;
            if (k->info->rounding.probabilities) entry["rounds_probabilities"] = true;
            index.push_back(std::move(entry));
        }
        for (const auto &b : backends.all()) b->release_case(*pc.spec);
    }
    return write_file_atomic(dir / "index.json", pretty_json(index));
}

PlanTimer::PlanTimer(const Suite &suite, const Plan &plan, Backends &backends) : backends_(backends) {
    for (const auto &pc : plan.cases) {
        bool any = false;
        for (const PlannedKernel *k : pc.kernels) any |= perf_selected(suite, *pc.spec, k->spec.label());
        if (!any) continue;
        inputs_.push_back(std::make_unique<CaseInputs>(generate_inputs(suite, *pc.spec)));
        for (const PlannedKernel *k : pc.kernels)
            if (perf_selected(suite, *pc.spec, k->spec.label()))
                rows_.push_back(Row{pc.spec, k, Invocation{&suite, pc.spec, inputs_.back().get(), &k->spec}});
    }
}

std::vector<std::pair<std::string, std::string>> PlanTimer::labels() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &r : rows_) out.emplace_back(r.spec->id, r.kernel->spec.label());
    return out;
}

Result<std::vector<LabelledSamples>> PlanTimer::time(const TimingRequest &timing, const std::vector<size_t> &which) {
    std::vector<PerfTarget> targets;
    for (size_t i : which) {
        ATTNGATE_CHECK(i < rows_.size());
        targets.push_back(PerfTarget{0, rows_[i].spec, rows_[i].kernel, rows_[i].inv});
    }
    const auto outcomes = time_targets(targets, backends_, timing);
    std::vector<LabelledSamples> out;
    for (size_t i = 0; i < targets.size(); ++i) {
        if (!outcomes[i].error.empty())
            return fail(ErrorKind::Infra, "{} / {}: {}", targets[i].spec->id, targets[i].kernel->spec.label(), outcomes[i].error);
        out.push_back({targets[i].spec->id, targets[i].kernel->spec.label(), outcomes[i].samples_s, outcomes[i].instructions});
    }
    return out;
}

Result<std::vector<LabelledSamples>> time_plan(const Suite &suite, const Plan &plan, Backends &backends,
                                               const TimingRequest &timing) {
    PlanTimer timer(suite, plan, backends);
    std::vector<size_t> all(timer.size());
    std::iota(all.begin(), all.end(), size_t{0});
    return timer.time(timing, all);
}

}  // namespace attngate
