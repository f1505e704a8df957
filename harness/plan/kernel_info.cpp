// Feature bits and their names; the rule for kernel names and texts.
#include "plan/kernel_info.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/ranges.h>

namespace attngate {

namespace {
const std::pair<uint32_t, const char *> kFeatureNames[] = {
    {ATTNGATE_FEATURE_CAUSAL, "causal"},   {ATTNGATE_FEATURE_WINDOW, "window"},
    {ATTNGATE_FEATURE_SEGMENT_IDS, "segment_ids"}, {ATTNGATE_FEATURE_BIAS, "bias"},
    {ATTNGATE_FEATURE_SOFTCAP, "softcap"}, {ATTNGATE_FEATURE_GQA, "gqa"},
    {ATTNGATE_FEATURE_HEAD_DIM_V, "head_dim_v"}, {ATTNGATE_FEATURE_F32, "f32"},
    {ATTNGATE_FEATURE_BF16, "bf16"},       {ATTNGATE_FEATURE_PAGED_KV, "paged_kv"},
    {ATTNGATE_FEATURE_RAGGED, "ragged"},
};
}  // namespace

std::string kernel_name_problem(std::string_view name) {
    constexpr size_t kMaxName = 128;
    const auto allowed = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; };
    if (name.empty() || name.size() > kMaxName || !std::isalnum(static_cast<unsigned char>(name.front())) ||
        !std::ranges::all_of(name, allowed))
        return fmt::format("kernel name {:?}: expected 1 to {} letters, digits, '_', '-' or '.', starting with a letter or digit",
                           name.substr(0, kMaxName), kMaxName);
    return {};
}

std::string kernel_text_problem(std::string_view text, std::string_view field) {
    constexpr size_t kMaxText = 1024;
    if (text.size() >= kMaxText) return fmt::format("its {} is not a string of under {} bytes", field, kMaxText);
    for (const char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return fmt::format("its {} holds control characters", field);
    return {};
}

std::vector<std::string> feature_list(uint32_t f) {
    std::vector<std::string> out;
    for (const auto &[bit, name] : kFeatureNames)
        if (f & bit) out.emplace_back(name);
    return out;
}

std::string feature_names(uint32_t f) { return fmt::format("{}", fmt::join(feature_list(f), ", ")); }

uint32_t feature_bits(const std::vector<std::string> &names, std::vector<std::string> &unknown) {
    uint32_t bits = 0;
    for (const auto &n : names) {
        bool found = false;
        for (const auto &[bit, name] : kFeatureNames)
            if (n == name) bits |= bit, found = true;
        if (!found) unknown.push_back(n);
    }
    return bits;
}

uint32_t effective_features(uint32_t api_version, uint32_t features) {
    return api_version < 3 ? features & ATTNGATE_FEATURE_ALL : features & ATTNGATE_FEATURE_ALL_PAGED;
}

std::string missing_features(const KernelInfo &k, const CaseSpec &c) {
    if (c.paged && k.api_version < 3)
        return fmt::format("kernel speaks ABI version {}, which has no paged KV cache: a paged case needs version 3 "
                           "(rebuild it against this attngate's kernel_abi.h and declare ATTNGATE_FEATURE_PAGED_KV)",
                           k.api_version);
    uint32_t need = c.dtype == ATTNGATE_DTYPE_BF16 ? ATTNGATE_FEATURE_BF16 : ATTNGATE_FEATURE_F32;
    if (c.causal) need |= ATTNGATE_FEATURE_CAUSAL;
    if (c.window_left >= 0 || c.window_right >= 0) need |= ATTNGATE_FEATURE_WINDOW;
    if (c.segments > 0 || c.segments_per_token) need |= ATTNGATE_FEATURE_SEGMENT_IDS;
    if (!c.bias_shape.empty()) need |= ATTNGATE_FEATURE_BIAS;
    if (c.softcap > 0) need |= ATTNGATE_FEATURE_SOFTCAP;
    if (c.heads_q != c.heads_kv) need |= ATTNGATE_FEATURE_GQA;
    if (c.head_dim_v != c.head_dim) need |= ATTNGATE_FEATURE_HEAD_DIM_V;
    if (c.paged) need |= ATTNGATE_FEATURE_PAGED_KV;
    if (c.paged && c.paged->ragged()) need |= ATTNGATE_FEATURE_RAGGED;
    if (const uint32_t missing = need & ~k.features) return fmt::format("kernel does not support: {}", feature_names(missing));
    return {};
}

bool declares_masked_nan_leak(const KernelInfo &k, std::string_view tensor) {
    const auto *leaks = k.conventions.if_contains("masked_nan_leaks");
    if (leaks == nullptr || !leaks->is_array()) return false;
    const auto &list = leaks->get_array();
    return std::any_of(list.begin(), list.end(), [&](const boost::json::value &x) { return x.is_string() && x.get_string() == tensor; });
}

}  // namespace attngate
