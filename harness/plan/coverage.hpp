// Which pairs of features a suite's cases exercise together. A kernel that mishandles two
// features only in combination (soft-cap and bias in the wrong order) passes every case
// that has just one of them, so coverage is designed pair by pair, not hoped for.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.hpp"
#include "plan/suite.hpp"

namespace attngate {

/// A feature of a case that changes what a kernel must compute. Each is counted only where
/// it has an effect: a causal mask that masks nothing (a one-row decode step) or a window
/// wider than the sequence is not causal or windowed attention.
enum class Feature {
    Causal,        ///< the causal mask removes at least one key of some row
    Window,        ///< the window removes at least one key of some row
    Segments,      ///< two or more segments (packed sequences)
    Bias,          ///< an additive bias
    Softcap,       ///< logit soft-capping
    Gqa,           ///< fewer KV heads than query heads (GQA, MQA)
    HeadDimV,      ///< value head_dim != query/key head_dim
    CrossLength,   ///< seq_q != seq_k
    PartialBlock,  ///< seq_k not a multiple of the default 128-key block: a partial last block
    Batch,         ///< batch > 1
    F32,           ///< f32 operands
    Bf16,          ///< bf16 operands
    Nan,           ///< a NaN injected into Q, K or V
    EmptyRows,     ///< some query row has no allowed key (its output must be zeros)
    Paged,         ///< K and V in pages of a pool, reached through page tables
    Ragged,        ///< paged, with some q_len other than 1 (a prefill chunk)
    PartialPage,   ///< paged, with some kv_len not a multiple of page_size: slots past it in its last page
};
inline constexpr size_t kFeatureCount = static_cast<size_t>(Feature::PartialPage) + 1;

/// The short name the coverage table prints ("causal", "sk%128", "empty_rows", ...).
const char *feature_name(Feature f);

/// Every feature, in table order.
const std::array<Feature, kFeatureCount> &all_features();

/// The features a case exercises (segment ids come from the suite's generator, so that
/// empty rows are counted exactly).
std::vector<Feature> case_features(const Suite &suite, const CaseSpec &c);

/// Why two features cannot meet in one case, or nullptr when they can.
const char *meaningless_pair(Feature a, Feature b);

/// True when a kernel declaring `bits` (ATTNGATE_FEATURE_*) can run a case with feature f.
/// Sq != Sk, a partial block, batch > 1 and NaN inputs need no declaration; empty rows need
/// a mask that can empty one (causal or window: packed segments alone line up queries with
/// keys); a partial page needs paged KV, and ragged needs paged KV too.
bool declares(uint32_t bits, Feature f);

/// Why a kernel declaring `bits` runs no case with both a and b although it declares both
/// (causal x paged without ragged: a decode step's one row sees every key), or nullptr.
const char *unreachable_pair(Feature a, Feature b, uint32_t bits);

/// True when a kernel declaring `bits` asks a suite for the pair: meaningful, both features
/// declared, and reachable.
bool required_pair(Feature a, Feature b, uint32_t bits);

/// One kernel of the suite: the pairs it declares, and those no case it runs has.
struct KernelCoverage {
    std::string kernel;
    std::string origin;     ///< "built-in", a plugin's path, an adapter's URL, or "" when not loaded
    uint32_t features = 0;  ///< declared ATTNGATE_FEATURE_* bits
    int cases = 0;          ///< cases the plan gives it and its features allow
    int required = 0;       ///< meaningful pairs it declares and can reach
    std::vector<std::pair<Feature, Feature>> missing;  ///< of those, the ones none of its cases has, a < b
};

/// How often each pair of features meets in a suite's cases, and which pairs that the
/// suite's kernels declare no case covers: overall (some kernel that declares the pair runs
/// a case with both) and for each kernel (a case it runs has both).
struct Coverage {
    std::vector<std::pair<std::string, std::vector<Feature>>> cases;  ///< case id -> its features
    std::array<std::array<int, kFeatureCount>, kFeatureCount> together{};  ///< [a][b]: cases with both; [a][a]: with a
    std::array<std::array<bool, kFeatureCount>, kFeatureCount> required{};  ///< [a][b], a < b: some kernel asks for it
    std::vector<KernelCoverage> kernels;
    /// Required pairs that no kernel declaring both meets in a case it runs, a < b, in table order.
    std::vector<std::pair<Feature, Feature>> missing;

    int meaningful_pairs() const;
    int required_pairs() const;
    /// The pairs some kernel misses (its KernelCoverage::missing, all kernels), in table order:
    /// `missing` and the pairs that only another kernel meets.
    std::vector<std::pair<Feature, Feature>> missing_for_some_kernel() const;
};

/// Coverage for the kernels of `plan` (make_plan of the same suite): a pair counts for a
/// kernel when both features are declared by it and it can reach them, and is covered when
/// some case the plan gives it, and its declared features allow, has both.
Coverage suite_coverage(const Suite &suite, const Plan &plan);

/// Coverage as though one kernel declared every feature and ran every case: every
/// meaningful pair is required.
Coverage suite_coverage(const Suite &suite);

}  // namespace attngate
