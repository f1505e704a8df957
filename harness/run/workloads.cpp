// Cost inputs and workload projections.
#include "run/workloads.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "checks/cost_check.hpp"
#include "checks/perf_check.hpp"
#include "io/files.hpp"
#include "store/keys.hpp"
#include "store/layered_store.hpp"

namespace attngate {

Result<CostInputs> load_cost_inputs(Store &store, const std::string &device_class) {
    CostInputs c;
    c.device_class = device_class;
    auto p = load_pricing(store);
    if (!p) return std::unexpected(p.error());
    if (!*p) {
        c.no_pricing = fmt::format("not priced: {} does not exist", store.where(kPricingKey));
        return c;
    }
    if (!(*p)->find(device_class))
        return fail(ErrorKind::Usage, "--device-class {}: not a device class of {}", device_class, (*p)->file.string());
    c.pricing = std::move(**p);
    auto workloads = load_workloads(store);
    if (!workloads) return std::unexpected(workloads.error());
    c.workloads = std::move(*workloads);
    return c;
}

namespace {

/// Per case, what one kernel's checks say a workload is priced from.
struct KernelFigures {
    std::map<std::string, double> now, then, leaks, ratio_low;
    bool memory = false;
};

KernelFigures figures_of(const RunResults &results, const std::string &kernel) {
    const auto put = [](std::map<std::string, double> &to, const std::string &case_id, const std::optional<double> &x) {
        if (x && std::isfinite(*x)) to[case_id] = *x;
    };
    KernelFigures f;
    for (const auto &r : results.results) {
        if (r.kernel != kernel) continue;
        for (const auto &c : r.checks) {
            if (const PerfMetrics *m = c.get<PerfMetrics>()) {
                put(f.now, r.case_id, m->median_s);
                // The baseline's median as the perf check compared it: the same in a run and a merge.
                put(f.then, r.case_id, priced_baseline_s(*m));
                if (m->status && *m->status != PerfCheckStatus::TooNoisy && *m->status != PerfCheckStatus::MachineMoved) put(f.ratio_low, r.case_id, m->ci_low);
            }
            if (const MemoryMetrics *m = c.get<MemoryMetrics>(); m && m->leak_bytes_per_call && std::isfinite(*m->leak_bytes_per_call)) {
                f.leaks[r.case_id] = *m->leak_bytes_per_call;
                f.memory = true;
            }
        }
    }
    return f;
}

}  // namespace

Result<void> add_workloads(RunResults &results, const std::vector<Workload> &workloads, const Pricing &pricing,
                           const std::string &workload_kernel, bool strict) {
    std::set<std::string, std::less<>> cases;
    for (const auto &r : results.results) cases.insert(r.case_id);
    const auto shipped = installed_data_dir();
    for (Workload w : workloads) {
        // A workload attngate ships (smoke's) that names none of this run's cases is another
        // suite's: a team's run lists it neither as projected nor as "not projected". The team's
        // own workloads are always listed, so a mistyped case id still says why it was not projected.
        const bool ours = shipped && w.file.string().starts_with((absolute_path(*shipped) / "").string());
        if (ours && std::none_of(w.shapes.begin(), w.shapes.end(), [&](const WorkloadShape &s) { return cases.contains(s.case_id); })) continue;
        // Any kernel can be projected: the one the workload names, or the run's choice.
        if (!workload_kernel.empty()) w.kernel = workload_kernel;
        const KernelFigures f = figures_of(results, w.kernel);
        const DevicePrice *price = pricing.find(w.device_class);
        if (!price) return fail(ErrorKind::BadInput, "{}: $.device_class: \"{}\" is not priced in {}", w.file.string(), w.device_class, pricing.file.string());
        results.workloads.push_back(workload_result(w, f.now, f.then, f.ratio_low, f.memory ? &f.leaks : nullptr, *price, strict));
    }
    return {};
}

Result<void> check_workload_kernel(const std::string &kernel, const Plan &plan) {
    if (kernel.empty() || std::any_of(plan.kernels.begin(), plan.kernels.end(), [&](const auto &k) { return k->spec.label() == kernel; }))
        return {};
    return fail(ErrorKind::Usage, "--workload-kernel {}: not a kernel of this run (a suite label such as flash[bq=64,bk=32], or a loaded plugin's kernel)",
                kernel);
}

}  // namespace attngate
