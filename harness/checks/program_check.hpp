// The program check: the program a kernel would run on the TPU (its Mosaic bodies and the
// StableHLO around them, lowered by an adapter) against a reference, hash by hash. A bump
// that changes what runs on the TPU is reported with a diff; it fails only where the
// suite asks for stable programs (program_stable).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/observation.hpp"
#include "results/baseline_values.hpp"
#include "results/results.hpp"

namespace attngate {

/// Lines of unified diff a program check keeps in results.json (the rest is cut, and says so).
inline constexpr int64_t kProgramDiffLines = 400;

/// What a program is compared against: its parts' labels and hashes, and a way to read a
/// part's text by hash (empty when it is not kept: the diff then says so).
struct ProgramReference {
    std::string against;  ///< "the program baseline", "A"
    std::vector<std::string> labels, sha256;
    std::function<std::optional<std::string>(const std::string &sha256)> text_of;
};

/// A unified diff of two texts (3 lines of context), with the counts of lines added and removed.
struct TextDiff {
    std::string unified;
    int64_t added = 0, removed = 0;
};
TextDiff unified_diff(const std::string &before, const std::string &after, const std::string &label);

/// The check: a skip when there is no program (the reason the host gave), no reference yet,
/// or the comparison; `stable` makes a changed program a failure.
CheckResult program_check(const ProgramObservation &now, const std::optional<ProgramReference> &ref, bool stable,
                          const std::string &no_reference_why);

/// The reference a program check recorded or a program baseline kept.
template <class Recorded>
std::optional<ProgramReference> program_reference(const Recorded &r, std::string against) {
    if (!r.part_names || !r.part_sha256 || r.part_names->size() != r.part_sha256->size()) return std::nullopt;
    return ProgramReference{std::move(against), *r.part_names, *r.part_sha256, {}};
}

}  // namespace attngate
