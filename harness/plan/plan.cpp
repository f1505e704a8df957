// Plan construction.
#include "plan/plan.hpp"

#include <algorithm>
#include <set>

#include <fmt/ranges.h>

namespace attngate {

namespace {

bool selected(const std::vector<std::string> &filter, std::string_view a, std::string_view b = {}) {
    return filter.empty() || std::find(filter.begin(), filter.end(), a) != filter.end() ||
           (!b.empty() && std::find(filter.begin(), filter.end(), b) != filter.end());
}

const KernelInfo *find_kernel(const std::vector<const KernelInfo *> &available, std::string_view name) {
    for (const auto *k : available)
        if (k->name == name) return k;
    return nullptr;
}

std::string names_of(const std::vector<const KernelInfo *> &available) {
    std::vector<std::string> v;
    for (const auto *k : available) v.push_back(k->name);
    return fmt::format("{}", fmt::join(v, ", "));
}

}  // namespace

size_t Plan::runs() const {
    size_t n = 0;
    for (const auto &c : cases) n += c.kernels.size();
    return n;
}

bool names_a_missing_kernel(const Suite &suite, const std::vector<const KernelInfo *> &available, const PlanFilter &filter) {
    for (const auto &k : suite.kernels)
        if (!find_kernel(available, k.kernel)) return true;
    for (const auto &want : filter.kernels)
        if (!find_kernel(available, std::string_view(want).substr(0, want.find('[')))) return true;
    return false;
}

Result<Plan> make_plan(const Suite &suite, const std::vector<const KernelInfo *> &available,
                       const std::vector<std::string> &extra_origins, const PlanFilter &filter) {
    Plan plan;
    for (const auto &k : suite.kernels) {
        const KernelInfo *info = find_kernel(available, k.kernel);
        if (!info)
            return fail(ErrorKind::BadInput,
                        "{}: {}: unknown kernel \"{}\" (available: {}; plugins load with --plugin, adapters start with --adapter)",
                        suite.file.string(), k.json_path, k.kernel, names_of(available));
        plan.kernels.push_back(std::make_unique<PlannedKernel>(PlannedKernel{k, info, true}));
    }
    // A plugin or adapter the suite names kernels of runs those; one it does not mention
    // runs all its kernels on every case they support. Decided from the suite's kernels
    // alone, before any joins: else only a plugin's first kernel would.
    std::set<std::string> suite_origins;
    for (const auto &k : plan.kernels) suite_origins.insert(k->info->origin);
    for (const auto *info : available) {
        const bool extra = std::find(extra_origins.begin(), extra_origins.end(), info->origin) != extra_origins.end();
        if (!extra || suite_origins.contains(info->origin)) continue;
        KernelSpec spec;
        spec.kernel = info->name;
        spec.json_path = info->origin;
        plan.kernels.push_back(std::make_unique<PlannedKernel>(PlannedKernel{spec, info, false}));
    }
    for (const auto &want : filter.kernels) {
        const bool known = std::any_of(plan.kernels.begin(), plan.kernels.end(), [&](const auto &k) {
            return k->spec.label() == want || k->spec.kernel == want;
        });
        if (known) continue;
        std::vector<std::string> planned;
        for (const auto &k : plan.kernels) planned.push_back(k->spec.label());
        if (find_kernel(available, want))  // loaded, but this suite does not run it
            return fail(ErrorKind::Usage, "--kernel {}: loaded, but not a kernel of this run: suite {} runs {} (a built-in kernel runs "
                        "when the suite's \"kernels\" lists it; a plugin's or an adapter's when the suite lists none of its kernels)",
                        want, suite.name, fmt::join(planned, ", "));
        return fail(ErrorKind::Usage, "--kernel {}: no such kernel in suite {} or any loaded plugin or adapter (this run's kernels: {})",
                    want, suite.name, fmt::join(planned, ", "));
    }
    for (const auto &want : filter.cases)
        if (!suite.find_case(want)) return fail(ErrorKind::Usage, "--case {}: not a case of suite {}", want, suite.name);

    for (const auto &c : suite.cases) {
        if (!selected(filter.cases, c.id)) continue;
        PlannedCase pc{&c, {}};
        for (const auto &k : plan.kernels) {
            if (!selected(filter.kernels, k->spec.label(), k->spec.kernel)) continue;
            // A case's kernel list names suite labels; extra kernels run every case.
            if (k->from_suite && !selected(c.kernels, k->spec.label())) continue;
            pc.kernels.push_back(k.get());
        }
        if (!pc.kernels.empty()) plan.cases.push_back(std::move(pc));
    }
    return plan;
}

}  // namespace attngate
