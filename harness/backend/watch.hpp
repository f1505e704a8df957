// What the harness watches around every in-process kernel call, so that a kernel that
// breaks the ABI's contract is caught and blamed, not the next kernel: its own copy of
// the inputs (compared with the pristine ones after each call), an output between guard
// floats and poisoned with a NaN payload that changes between calls, and a bitwise
// comparison of outputs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/inputs.hpp"

namespace attngate {

/// The kernel's private copy of a case's inputs.
class PrivateInputs {
public:
    explicit PrivateInputs(const CaseInputs &pristine) : pristine_(pristine), mine_(pristine) {}
    const CaseInputs &get() const { return mine_; }
    /// Names each tensor the last call wrote to ("wrote to its input q: 3 of 4096 elements
    /// changed, first at element 17") and restores it, so the next call sees pristine inputs.
    void check(std::vector<std::string> &violations);

private:
    const CaseInputs &pristine_;
    CaseInputs mine_;
};

/// The output buffer, with guard floats on both sides.
class GuardedOutput {
public:
    explicit GuardedOutput(size_t elements);
    float *data() { return buffer_.data() + kGuard; }
    std::span<const float> view() const { return {buffer_.data() + kGuard, elements_}; }
    /// Fills the output with the call's NaN payload (pattern 0 or 1) and the guards with theirs.
    void poison(int pattern);
    /// Names a write before or past the output since the last poison().
    void check(std::vector<std::string> &violations);

    static constexpr size_t kGuard = 16;  ///< floats (64 bytes) on each side

private:
    std::vector<float> buffer_;
    size_t elements_;
};

/// Bitwise differences between two outputs of the same length.
struct OutputDifference {
    int64_t elements = 0;
    double max_abs = 0.0;
};
OutputDifference compare_outputs(std::span<const float> a, std::span<const float> b);

}  // namespace attngate
