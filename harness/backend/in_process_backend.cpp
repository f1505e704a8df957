// In-process backend: registry lookups, isolation and the Google Benchmark timing child.
#include "backend/in_process_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "attngate/kernel_tools.hpp"
#include "backend/calibration.hpp"
#include "backend/instruction_count.hpp"
#include "backend/isolation.hpp"
#include "io/supervisor.hpp"
#include "backend/memory.hpp"
#include "backend/observe.hpp"
#include "backend/timing.hpp"
#include "backend/watch.hpp"
#include "io/json_io.hpp"

namespace attngate {

std::string builtin_numerics_path() {
    const std::string path = kernels::active_path();
    return kernels::bf16_products().starts_with("vdpbf16ps") ? path + "+vdpbf16ps" : path;
}

Result<std::unique_ptr<InProcessBackend>> InProcessBackend::create(const std::vector<std::string> &plugins) {
    // A typo would run the detected path and file its numerics under that path's name.
    if (const char *isa = std::getenv("ATTNGATE_KERNEL_ISA"); isa && *isa && !kernels::limit_path(isa))
        return fail(ErrorKind::Usage, "ATTNGATE_KERNEL_ISA={}: expected portable, avx2, avx512 or avx512bf16", isa);
    KernelRegistry reg = KernelRegistry::with_builtins();
    for (const auto &p : plugins)
        if (auto r = reg.load_plugin(p); !r) return std::unexpected(r.error());
    return std::unique_ptr<InProcessBackend>(new InProcessBackend(std::move(reg)));
}

InProcessBackend::InProcessBackend(KernelRegistry registry) : registry_(std::move(registry)) {
    for (size_t i = 0; i < registry_.all().size(); ++i) {
        const attngate_kernel *k = registry_.all()[i];
        KernelInfo info;
        info.name = k->name;
        info.version = k->version ? k->version : "";
        info.description = k->description ? k->description : "";
        info.features = effective_features(k->api_version, k->features);
        info.workspace_growth = k->workspace_growth;
        info.origin = registry_.origins()[i];
        info.api_version = k->api_version;
        infos_.push_back(std::move(info));
    }
}

const attngate_kernel &InProcessBackend::table_of(const Invocation &inv) const {
    const attngate_kernel *k = registry_.find(inv.kernel->kernel);
    ATTNGATE_CHECK(k != nullptr);  // the plan only holds kernels this backend offered
    return *k;
}

std::string InProcessBackend::unsupported(const Invocation &inv, double /*timeout_s: asked in process*/) {
    const attngate_kernel &k = table_of(inv);
    if (!k.supports) return {};
    // Planning asks before any inputs exist; a kernel with its own supports() may look at
    // the tensors, so it gets the real ones.
    std::optional<CaseInputs> own;
    if (!inv.inputs) own = generate_inputs(*inv.suite, *inv.spec);
    std::vector<float> probe_out(1);
    attngate_problem p = make_problem(*inv.spec, inv.inputs ? *inv.inputs : *own, probe_out.data(), nullptr, inv.kernel->block_q,
                                      inv.kernel->block_k);
    char why[256] = {0};
    if (k.supports(&k, &p, why, sizeof why)) return {};
    const std::string reason = bounded_string(why, sizeof why);
    return reason.empty() ? "kernel's supports() declined the case" : reason;
}

Observation InProcessBackend::observe(const Invocation &inv, const ObserveRequest &req) {
    const attngate_kernel &k = table_of(inv);
    if (req.conformance) {  // the run asked supports() at planning; the conformance check did not
        Observation declined;
        declined.unsupported = unsupported(inv, req.timeout_s);
        if (!declined.unsupported.empty()) return declined;
    }
    const auto work = [&] { return observe_kernel(k, inv, req); };
    if (!req.isolation) {
        note_activity(fmt::format("{} on case {}", inv.kernel->label(), inv.spec->id));
        return work();
    }
    Observation o = observe_isolated(work, req.timeout_s);
    if (o.crash || o.kernel_rc != 0 || !o.host_error.empty() || o.nondeterminism) return o;
    // A second process, fresh: thread schedules, allocator addresses and lazy state differ.
    ObserveRequest once = req;
    once.memory = false;
    const Observation again = observe_isolated([&] { return observe_kernel(k, inv, once); }, req.timeout_s);
    if (!again.crash && again.kernel_rc == 0)
        if (const OutputDifference d = compare_outputs(o.output, again.output); d.elements)
            o.nondeterminism = Nondeterminism{"processes", d.elements, d.max_abs, false};
    return o;
}

namespace {

/// One invocation to time, with the output and allocator its calls write to.
struct Target {
    const attngate_kernel *kernel;
    std::vector<float> out;
    std::unique_ptr<CountingAllocator> alloc;
    attngate_problem problem{};
};

std::vector<std::vector<double>> parse_samples(const std::string &bytes, size_t n) {
    boost::system::error_code ec;
    const json::value v = json::parse(bytes, ec);
    if (ec || !v.is_array() || v.get_array().size() != n) return {};
    std::vector<std::vector<double>> out;
    for (const auto &row : v.get_array()) {
        if (!row.is_array()) return {};
        out.emplace_back();
        for (const auto &x : row.get_array()) {
            if (!x.is_number()) return {};
            out.back().push_back(x.to_number<double>());
        }
    }
    return out;
}

/// One call of the target's kernel; its status is not timing's business (the run judged
/// the kernel's correctness before timing it).
void call_once(Target &t) {
    char err[256];
    t.kernel->run(t.kernel, &t.problem, err, sizeof err);
}

using Instances = std::map<const attngate_kernel *, std::unique_ptr<KernelInstance>>;

/// One instance per kernel, shared by its targets, which get it as problem.instance.
Instances attach_instances(std::vector<Target> &targets, int num_threads) {
    Instances instances;
    for (auto &t : targets) {
        auto &inst = instances[t.kernel];
        if (!inst) inst = std::make_unique<KernelInstance>(*t.kernel, num_threads);
        t.problem.instance = inst->get();
    }
    return instances;
}

/// The entries time_targets adds after the targets' when calibrating: the workload on one
/// thread, then on the threads the suite times on.
constexpr size_t kCalibrationEntries = 2;

/// Times every target in this process: one instance per kernel, shared by its cases; with
/// req.calibrate, the calibration workloads join them as kCalibrationEntries more (last)
/// entries, and req.on_progress hears of the targets' repetitions. The wall-time samples of
/// every entry, then the CPU-time samples of every entry.
std::vector<std::vector<double>> time_targets(std::vector<Target> &targets, int num_threads, TimingOptions timing,
                                              const TimingRequest &req) {
    const Instances instances = attach_instances(targets, num_threads);
    const bool calibrate = req.calibrate;
    const std::vector<int64_t> &iterations = req.iterations;
    size_t done = 0;  // the targets' repetitions (the calibration's are not the set's)
    const size_t total = targets.size() * static_cast<size_t>(std::max(timing.repetitions, 0));
    if (req.on_progress)
        timing.on_repetition = [&](size_t request) {
            if (request < targets.size()) req.on_progress(++done, total);
        };
    std::vector<TimedCall> calls;
    for (size_t i = 0; i < targets.size(); ++i) {
        Target &t = targets[i];
        calls.push_back({t.kernel->name, [&t] { call_once(t); }, i < iterations.size() ? iterations[i] : 0});
    }
    std::optional<ParallelCalibration> parallel;
    if (calibrate) {
        parallel.emplace(num_threads > 0 ? num_threads : kernels::default_threads());  // 0: the kernels' default
        calls.push_back({"calibration", run_calibration_workload});
        calls.push_back({"parallel calibration", [&parallel] { parallel->run(); }});
    }
    std::vector<std::vector<double>> cpu;
    auto samples = time_calls(calls, timing, &cpu);
    samples.insert(samples.end(), std::make_move_iterator(cpu.begin()), std::make_move_iterator(cpu.end()));
    return samples;
}

/// Counts one call of every target on one thread (a thread pool's waiting would count),
/// in this process: it is the one callgrind runs.
std::vector<TimingOutcome> count_targets(std::vector<Target> &targets) {
    std::vector<TimingOutcome> out(targets.size());
    const Instances instances = attach_instances(targets, 1);
    for (size_t i = 0; i < targets.size(); ++i) {
        Target &t = targets[i];
        auto n = count_instructions([&t] { call_once(t); });
        if (n) out[i].instructions = *n;
        else out[i].error = n.error().message;
    }
    return out;
}

}  // namespace

std::vector<TimingOutcome> InProcessBackend::time(const std::vector<Invocation> &invs, const TimingRequest &req) {
    // The targets, each case's inputs those in `copies` when given (else the plan's own).
    const auto targets_of = [&](const std::map<const CaseInputs *, CaseInputs> *copies) {
        std::vector<Target> targets;
        for (const auto &inv : invs) {
            Target t{&table_of(inv), std::vector<float>(static_cast<size_t>(output_elements(*inv.spec))),
                     std::make_unique<CountingAllocator>(), {}};
            const CaseInputs &in = copies ? copies->at(inv.inputs) : *inv.inputs;
            t.problem = make_problem(*inv.spec, in, t.out.data(), t.alloc->abi(), inv.kernel->block_q, inv.kernel->block_k);
            targets.push_back(std::move(t));
        }
        return targets;
    };
    if (req.count_instructions) {
        std::vector<Target> targets = targets_of(nullptr);
        return count_targets(targets);
    }
    const TimingOptions timing{req.repetitions, req.min_time_s, true};
    std::vector<TimingOutcome> out(invs.size());
    if (invs.empty()) return out;
    const int threads = invs.front().suite->timing_threads();  // one suite per timing set
    std::vector<std::vector<double>> samples;
    if (!req.isolation) {
        note_activity(fmt::format("the timing of {} on case {}{}", invs.front().kernel->label(), invs.front().spec->id,
                                  invs.size() > 1 ? fmt::format(" and {} more", invs.size() - 1) : ""));
        std::vector<Target> targets = targets_of(nullptr);
        samples = time_targets(targets, threads, timing, req);
    } else {  // the parent builds no targets: each child makes its own
        auto bytes = run_isolated([&](const StepFn &step) {
            TimingRequest in_child = req;
            in_child.on_progress = step;  // the child's steps come back to req.on_progress over a pipe
            // Each timing child calls the kernels on its own copy of the inputs, on pages of its
            // own and from a random offset of the heap: where a row's buffers landed slowed it
            // by 12-20% for a whole process, in a second child with the same layout too
            // (docs/perf-gate-log.md, 2026-12-07), so a regression's second timing draws its
            // placement again instead of sharing the first one's.
            static std::vector<char> heap_offset;  // static: an allocation the compiler keeps
            heap_offset.resize(64 * (1 + std::random_device{}() % 256));
            std::map<const CaseInputs *, CaseInputs> copies;
            for (const auto &inv : invs) copies.try_emplace(inv.inputs, *inv.inputs);
            std::vector<Target> own = targets_of(&copies);
            json::array all;
            for (const auto &s : time_targets(own, threads, timing, in_child)) all.push_back(json::array(s.begin(), s.end()));
            return json::serialize(all);
        }, req.timeout_s, req.on_progress);
        if (!bytes) {
            for (auto &o : out) o.error = "timing child " + bytes.error().describe();
            return out;
        }
        samples = parse_samples(*bytes, 2 * (invs.size() + (req.calibrate ? kCalibrationEntries : 0)));
        if (samples.empty()) {
            for (auto &o : out) o.error = "timing child " + incomplete_result(0).describe();
            return out;
        }
    }
    const size_t entries = samples.size() / 2;  // wall times first, then CPU times
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].samples_s = std::move(samples[i]);
        out[i].cpu_samples_s = std::move(samples[entries + i]);
        if (!req.calibrate) continue;
        out[i].calibration_s = samples[invs.size()];
        out[i].parallel_calibration_s = samples[invs.size() + 1];
    }
    return out;
}

}  // namespace attngate
