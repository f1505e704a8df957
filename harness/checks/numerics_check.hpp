// Numerics drift: a kernel's output against its own previous output, bit for bit. A
// dependency bump moves bits long before it moves an output past the fp64 golden's
// tolerance (measured: jax 0.7.2 -> 0.8.3 changed up to 82% of f32 elements by <= 5.4e-7,
// inside every tolerance), so this check always says what moved, and fails only when a
// suite asks for bitwise stability.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace attngate {

/// What is kept of an output so a later run can be diffed against it: its hash and the
/// bits of a fixed, evenly spread sample of its elements.
struct OutputSketch {
    std::string sha256;
    int64_t elements = 0;
    std::vector<uint32_t> sample_bits;  ///< float32 bit patterns at sketch_indices(elements)

    /// The numerics metrics that record this sketch.
    NumericsMetrics metrics() const;
    /// The sketch a numerics check or a numerics baseline recorded; nullopt when it holds
    /// none (a field missing, or samples that do not fit the element count).
    template <class Recorded>
    static std::optional<OutputSketch> of(const Recorded &r);
};

inline constexpr int64_t kSketchSamples = 256;

/// The sampled positions of an output of n elements (evenly spread, first and last included).
std::vector<int64_t> sketch_indices(int64_t n);
OutputSketch sketch_output(std::span<const float> out);

template <class Recorded>
std::optional<OutputSketch> OutputSketch::of(const Recorded &r) {
    if (!r.sha256 || !r.elements || !r.sample_bits || *r.elements < 0 ||
        r.sample_bits->size() != sketch_indices(*r.elements).size())
        return std::nullopt;
    return OutputSketch{*r.sha256, *r.elements, *r.sample_bits};
}

/// How two outputs differ.
struct NumericsDiff {
    bool identical = true;     ///< every bit the same (exact: hashes or full outputs)
    bool exact = true;         ///< false: the figures below come from the sketches' samples
    int64_t compared = 0;      ///< elements compared
    int64_t changed = 0;       ///< elements whose bits differ
    double max_abs = 0.0;      ///< largest |new - old| over finite pairs
    int64_t max_ulp = 0;       ///< largest distance in float32 units in the last place
    int64_t nan_changed = 0;   ///< elements that became or stopped being NaN
};

/// Distance between two floats in units in the last place (0 for bit-identical; NaN
/// pairs count as 0 when both are NaN).
int64_t ulp_distance(float a, float b);

NumericsDiff diff_outputs(std::span<const float> before, std::span<const float> after);
NumericsDiff diff_sketches(const OutputSketch &before, const OutputSketch &after);

/// The check: `against` names the reference ("the numerics baseline", "the last run",
/// "side A"); tolerance is the golden's (0: unknown); bitwise makes any change a failure.
CheckResult numerics_check(const NumericsDiff &d, const OutputSketch &now, const std::string &against, double tolerance,
                           bool bitwise);

/// B's outputs against A's, from the sketches their numerics checks recorded: one
/// numerics check per case x kernel present in both (what `attngate compare` prints).
std::vector<CaseResult> compare_numerics(const RunResults &a, const RunResults &b);

/// The check when there is nothing to compare with yet.
CheckResult numerics_unreferenced(const OutputSketch &now, const std::string &why);

}  // namespace attngate
