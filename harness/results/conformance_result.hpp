// The conformance check's outcome as data: each probe case's verdict and distances, per
// kernel. checks/conformance judges, run/conform fills the report, report/ formats it; it
// lives here, below all three, so the formatter reads results only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attngate {

/// A probe that does not apply to a kernel, and why.
struct SkippedProbe {
    std::string probe, reason;
};

/// How far a kernel's output is from one candidate.
struct CandidateDistance {
    std::string name;
    double max_error = 0.0;      ///< max |out - candidate| / scale over elements finite in both
    int64_t nan_mismatch = 0;    ///< elements NaN in one and not the other
    bool fits = false;
};

struct ProbeOutcome {
    enum class Label { Attngate, Declared, Neither, Declined, Error };
    std::string probe, case_id;
    Label label = Label::Neither;
    std::string follows;   ///< the candidate it fits, empty when none
    std::string closest;   ///< the nearest candidate when none fits
    std::vector<CandidateDistance> distances;
    std::string message;   ///< one sentence with the numbers
    bool pass = false;
};

const char *label_name(ProbeOutcome::Label l);

struct KernelConformance {
    std::string kernel, origin;
    std::vector<ProbeOutcome> outcomes;
    std::vector<SkippedProbe> skipped;
    std::string error;  ///< non-empty: the kernel's declarations could not be read
    bool pass() const;
};

struct ConformanceReport {
    std::vector<KernelConformance> kernels;
    std::vector<std::string> load_errors;  ///< kernel sources an adapter could not load
    bool pass() const;
};

}  // namespace attngate
