// The store's key layout, in one place (nothing else spells a key):
//   goldens/<suite>/manifest.json, goldens/<suite>/<case>.npy, goldens/<suite>/fingerprint.json
//   <check>/<suite>.json                      memory (machine-independent)
//   <check>/<machine class>/<suite>.json      perf, compile, numerics
//   programs/<sha256>.mlir                    a TPU program's text, once per content (program baselines)
//   pricing.json, workloads/<name>.json
//   history/<suite>/<machine class>/<YYYY-MM>/<run id>.json, history/<suite>/fingerprints/<hash>.json
//   results/<suite>/<machine class>/<YYYY-MM>/<run id>.json   (the whole results of a history record)
// Components derived from input (suite names, machine classes, case ids) are checked to
// stay inside their folder.
#pragma once

#include <string>
#include <string_view>

#include "io/json_describe.hpp"
#include "results/check_metrics.hpp"
#include "store/store.hpp"

namespace attngate {

inline constexpr std::string_view kPricingKey = "pricing.json";
inline constexpr std::string_view kWorkloadsPrefix = "workloads/";

/// goldens/<suite>/<file>
inline Result<std::string> golden_key(std::string_view suite, std::string_view file) {
    return make_key({"goldens", suite, file}, "golden of suite " + std::string(suite));
}

/// <check>/[<machine class>/]<suite>.json
inline Result<std::string> baseline_key(CheckName check, std::string_view suite, std::string_view machine_class = "") {
    const std::string file = std::string(suite) + ".json";
    if (machine_class.empty()) return make_key({enum_name(check), file}, "baseline of suite " + std::string(suite));
    return make_key({enum_name(check), key_component(machine_class), file}, "baseline of suite " + std::string(suite));
}

/// programs/<sha256>.mlir: a TPU program part's text, kept once by its hash.
inline Result<std::string> program_text_key(std::string_view sha256) {
    if (sha256.size() != 64 || sha256.find_first_not_of("0123456789abcdef") != std::string_view::npos)
        return fail(ErrorKind::BadInput, "program text key: \"{}\" is not a sha256 in hex", sha256);
    return "programs/" + std::string(sha256) + ".mlir";
}

/// <check>/ : every machine class's baselines of a check.
inline std::string baseline_prefix(CheckName check) { return std::string(enum_name(check)) + "/"; }

}  // namespace attngate
