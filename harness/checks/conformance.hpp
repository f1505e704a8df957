// The conformance check: a kernel run on cases built to tell conventions apart (causal
// alignment, where the scale applies, bias before or after the soft-cap, GQA head mapping,
// a fully masked row, a NaN at a masked key, bf16 rounding of the probabilities). For each
// case it names the convention the kernel's output follows and says whether that is
// attngate's, the one the kernel declared, or neither, with the numbers. This is how a
// kernel author gets a mapping right the first time. Pure: probe cases in, verdicts out;
// harness/run/conform.cpp runs the kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/observation.hpp"
#include "io/error.hpp"
#include "plan/inputs.hpp"
#include "plan/kernel_info.hpp"
#include "plan/suite.hpp"
#include "results/conformance_result.hpp"

namespace attngate {

/// What a kernel declares about the conventions a probe tells apart (the protocol's
/// "conventions" and "rounds_to_case_dtype"). In-process kernels (C ABI) declare nothing:
/// attngate's semantics throughout, and either rounding of bf16 probabilities.
struct DeclaredConventions {
    bool declares = false;                     ///< false: declares nothing (an in-process kernel)
    std::string causal_alignment = "case";     ///< "case", "top_left" or "bottom_right"
    std::string fully_masked_row = "zeros";    ///< "zeros", "mean_of_v" or "nan"
    bool k_nan_leaks = false, v_nan_leaks = false;
    bool rounds_probabilities = false;
};

/// The declarations of a kernel; an unknown value is an error naming the kernel and key.
Result<DeclaredConventions> declared_conventions(const KernelInfo &k);

/// One way of computing the probed aspect, and the output it gives on the probe's inputs.
struct Candidate {
    std::string name;         ///< "top_left", "scale_twice", ...
    std::string description;  ///< "causal masks aligned top-left (query row i at key i)"
    std::vector<double> output;
};

/// A case of a probe, its inputs and the candidates' outputs, judged against a kernel's output.
struct ProbeCase {
    std::string probe;  ///< causal_alignment, scale, bias_softcap, gqa, fully_masked_row, masked_nan, bf16_probabilities
    std::string id;     ///< the case within the probe
    CaseSpec spec;
    CaseInputs inputs;
    std::vector<Candidate> candidates;
    std::vector<std::string> attngate;  ///< the candidates that are attngate's semantics
    std::vector<std::string> declared;  ///< the candidates the kernel's declarations admit
    /// Per-element scale of the match tolerance (the bf16 probe's terms); empty: the
    /// attngate candidate's largest magnitude, for every element.
    std::vector<double> scale;
    double tolerance = 5e-3;            ///< an output fits a candidate within tolerance x scale
    bool nan_pattern = false;           ///< judged by where NaN lands (the masked-NaN probe)
    int64_t masked_key = -1;            ///< the masked-NaN probe's key
};

/// The probe cases for a kernel with these features and declarations.
std::vector<ProbeCase> probe_cases(uint32_t features, const DeclaredConventions &declared, std::vector<SkippedProbe> *skipped);

/// Judges one observation of a probe case.
ProbeOutcome judge_probe(const ProbeCase &pc, const Observation &o);

/// The smallest max |a - b| / scale between any two candidates of a case: how well it tells
/// them apart (the tests require 10x the tolerance).
double candidate_separation(const ProbeCase &pc);

}  // namespace attngate
