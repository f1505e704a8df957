// What a backend says about one of its kernels: enough to plan a run without calling it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "attngate/kernel_abi.h"
#include "plan/suite.hpp"

namespace attngate {

/// What a kernel declares it rounds to the case's dtype on a bf16 case (protocol key
/// "rounds_to_case_dtype"): its output, and the softmax probabilities before P·V (XLA's
/// and Pallas flash's convention). The golden check allows for exactly that rounding.
struct DeclaredRounding {
    bool output = false;
    bool probabilities = false;
    bool any() const { return output || probabilities; }
};

struct KernelInfo {
    std::string name;  ///< unique across every backend of a run
    std::string version;
    std::string description;
    uint32_t features = 0;  ///< ATTNGATE_FEATURE_* bits (of its ABI version: effective_features)
    uint32_t workspace_growth = ATTNGATE_WORKSPACE_UNSPECIFIED;
    std::string origin;  ///< "built-in", a plugin's path or an adapter's URL
    boost::json::object conventions;  ///< what a remote kernel reports of its conventions
    DeclaredRounding rounding;
    uint32_t api_version = ATTNGATE_API_VERSION;  ///< the ABI its table speaks (in-process kernels)
};

/// Why `name` cannot name a kernel, or empty. One rule for plugins and adapters: 1 to 128
/// letters, digits, '_', '-' or '.', starting with a letter or digit, so that a name is safe
/// on a terminal, in a file name and in a URL path.
std::string kernel_name_problem(std::string_view name);
/// Why a kernel's version or description (`field`) cannot be shown, or empty: under 1024
/// bytes and without control characters, which would reach a terminal raw.
std::string kernel_text_problem(std::string_view text, std::string_view field);
/// The feature bits a table declares, read as its ABI version defined them: a version-2
/// table's bits past the dense features mean nothing.
uint32_t effective_features(uint32_t api_version, uint32_t features);

/// Why a kernel's declared features rule the case out, or empty when they do not.
std::string missing_features(const KernelInfo &k, const CaseSpec &c);

/// True when the kernel declares (conventions.masked_nan_leaks, from an adapter) that a NaN in
/// `tensor` ("k" or "v") at a key a row masks reaches that row: such a kernel declines a case
/// that puts one there. Read leniently: the conformance check is what rejects a malformed list.
bool declares_masked_nan_leak(const KernelInfo &k, std::string_view tensor);

/// The names of a feature bit set ("causal", "window", "bf16"), in one fixed order.
std::vector<std::string> feature_list(uint32_t features);

/// "causal, window, bf16": feature_list joined.
std::string feature_names(uint32_t features);

/// Feature bits from their names ("causal", "gqa", ...); unknown names are returned in `unknown`.
uint32_t feature_bits(const std::vector<std::string> &names, std::vector<std::string> &unknown);

}  // namespace attngate
