// The conformance run: probe cases through the backends, one kernel at a time.
#include "run/conform.hpp"

#include <algorithm>

#include <fmt/ranges.h>

namespace attngate {

namespace {

/// The suite the probe cases belong to: the threads in-process kernels get, and a name.
Suite conformance_suite(double timeout_s) {
    Suite s;
    s.name = "conformance";
    s.file = "(attngate conform)";
    s.timeout_s = timeout_s;
    return s;
}

KernelConformance conform_kernel(Backend &host, const KernelInfo &info, const Suite &suite, const ConformOptions &opt,
                                 const ConformProgress &progress) {
    KernelConformance kc;
    kc.kernel = info.name;
    kc.origin = info.origin;
    auto declared = declared_conventions(info);
    if (!declared) {
        kc.error = declared.error().message;
        return kc;
    }
    ObserveRequest req;
    req.conformance = true;
    req.isolation = opt.isolation;
    req.timeout_s = opt.timeout_s;
    KernelSpec spec;
    spec.kernel = info.name;
    for (const ProbeCase &pc : probe_cases(info.features, *declared, &kc.skipped)) {
        if (const std::string why = missing_features(info, pc.spec); !why.empty()) {
            kc.skipped.push_back({pc.probe + "/" + pc.id, why});
            continue;
        }
        const Observation o = host.observe(Invocation{&suite, &pc.spec, &pc.inputs, &spec}, req);
        host.release_case(pc.spec);
        kc.outcomes.push_back(judge_probe(pc, o));
        if (progress) progress(kc, kc.outcomes.back());
    }
    return kc;
}

}  // namespace

Result<ConformanceReport> run_conformance(Backends &backends, const ConformOptions &options, const ConformProgress &progress) {
    std::vector<std::string> names;
    for (const auto *k : backends.kernels()) names.push_back(k->name);
    for (const auto &want : options.kernels)
        if (std::find(names.begin(), names.end(), want) == names.end())
            return fail(ErrorKind::Usage, "--kernel {}: no such kernel (available: {})", want, fmt::join(names, ", "));
    const Suite suite = conformance_suite(options.timeout_s);
    ConformanceReport report;
    report.load_errors = backends.load_errors();
    for (const auto *k : backends.kernels()) {
        if (!options.kernels.empty() && std::find(options.kernels.begin(), options.kernels.end(), k->name) == options.kernels.end())
            continue;
        report.kernels.push_back(conform_kernel(*backends.host_of(k->name), *k, suite, options, progress));
    }
    return report;
}

}  // namespace attngate
