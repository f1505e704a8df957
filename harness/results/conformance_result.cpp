// Labels and pass rules of the conformance outcome.
#include "results/conformance_result.hpp"

#include <algorithm>

namespace attngate {

const char *label_name(ProbeOutcome::Label l) {
    switch (l) {
    case ProbeOutcome::Label::Attngate: return "attngate";
    case ProbeOutcome::Label::Declared: return "declared";
    case ProbeOutcome::Label::Neither: return "neither";
    case ProbeOutcome::Label::Declined: return "declined";
    case ProbeOutcome::Label::Error: return "error";
    }
    return "?";
}

bool KernelConformance::pass() const {
    return error.empty() && std::all_of(outcomes.begin(), outcomes.end(), [](const ProbeOutcome &o) { return o.pass; });
}

bool ConformanceReport::pass() const {
    return load_errors.empty() && std::all_of(kernels.begin(), kernels.end(), [](const KernelConformance &k) { return k.pass(); });
}

}  // namespace attngate
