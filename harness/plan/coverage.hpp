// Which pairs of features a suite's cases exercise together. A kernel that mishandles two
// features only in combination (soft-cap and bias in the wrong order) passes every case
// that has just one of them, so coverage is designed pair by pair, not hoped for.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

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

/// How often each pair of features meets in a suite's cases.
struct Coverage {
    std::vector<std::pair<std::string, std::vector<Feature>>> cases;  ///< case id -> its features
    std::array<std::array<int, kFeatureCount>, kFeatureCount> together{};  ///< [a][b]: cases with both; [a][a]: with a
    std::vector<std::pair<Feature, Feature>> missing;  ///< meaningful pairs no case has, a < b

    int meaningful_pairs() const;
};

Coverage suite_coverage(const Suite &suite);

}  // namespace attngate
