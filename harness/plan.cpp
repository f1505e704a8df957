// Plan construction.
#include "plan.hpp"

#include <algorithm>

namespace attngate {

namespace {
bool selected(const std::vector<std::string> &filter, std::string_view a, std::string_view b = {}) {
    return filter.empty() || std::find(filter.begin(), filter.end(), a) != filter.end() ||
           (!b.empty() && std::find(filter.begin(), filter.end(), b) != filter.end());
}
}  // namespace

Result<std::vector<PlannedCase>> make_plan(const Suite &suite, const KernelRegistry &registry, const PlanFilter &filter) {
    std::vector<PlannedKernel> kernels;
    for (const auto &k : suite.kernels) {
        const attngate_kernel *kernel = registry.find(k.kernel);
        if (!kernel)
            return fail(ErrorKind::BadInput, "{}: {}: unknown kernel \"{}\" (registered: {}; plugins load with --plugin)",
                        suite.file.string(), k.json_path, k.kernel, registry.names());
        if (selected(filter.kernels, k.label(), k.kernel)) kernels.push_back({&k, kernel});
    }
    for (const auto &want : filter.kernels) {
        const bool known = std::any_of(suite.kernels.begin(), suite.kernels.end(),
                                       [&](const KernelSpec &k) { return k.label() == want || k.kernel == want; });
        if (!known) return fail(ErrorKind::Usage, "--kernel {}: not a kernel of suite {}", want, suite.name);
    }
    for (const auto &want : filter.cases)
        if (!suite.find_case(want)) return fail(ErrorKind::Usage, "--case {}: not a case of suite {}", want, suite.name);

    std::vector<PlannedCase> plan;
    for (const auto &c : suite.cases) {
        if (!selected(filter.cases, c.id)) continue;
        PlannedCase pc{&c, {}};
        for (const auto &k : kernels)
            if (selected(c.kernels, k.spec->label())) pc.kernels.push_back(k);
        if (!pc.kernels.empty()) plan.push_back(std::move(pc));
    }
    return plan;
}

}  // namespace attngate
