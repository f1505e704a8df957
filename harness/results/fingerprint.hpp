// The dependency and environment fingerprint recorded in every results file and every
// baseline, and the diff between two of them: what moved between a baseline and a run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"
#include "plan/kernel_info.hpp"

namespace attngate {

/// Collects the compiler, flags, standard library and glibc, the libraries' versions as
/// they run (libcurl, OpenSSL, SLEEF, the bench's OpenBLAS), every loaded shared object
/// with its package version ("loaded"), CPU, OS, the kernels' versions, each plugin's own
/// toolchain ("plugins": the compilers in its .comment section, its resolved DT_NEEDED; see
/// plugin_toolchains), what the backends report (an adapter's python, jax, jaxlib... under
/// "adapters"), and the given lock files (an unreadable or malformed one is an error).
Result<json::object> collect_fingerprint(const std::vector<const KernelInfo *> &kernels, const json::object &backends,
                                         const std::vector<std::string> &lockfiles);

/// The compiler that built attngate and its built-in kernels ("g++ 12.2.0", "clang 19.1.7 …").
std::string compiler_name();

/// This machine's host name, recorded beside the fingerprint and not in it: every CI runner
/// has its own, which would make every run look like a dependency change.
std::string host_name();

/// One thing that moved between two fingerprints; key is a dotted path.
struct FingerprintChange {
    enum class Kind { Added, Removed, Changed };
    Kind kind;
    std::string key;
    std::string old_value, new_value;  ///< empty for the side that lacks it
    bool machine = false;              ///< the machine's (cpu, os), not what the gate runs
};

const char *change_kind_name(FingerprintChange::Kind k);

/// What moved from `before` to `after`: what the gate runs first (toolchain, libraries,
/// loaded libraries, lock files, adapters, kernels, plugins), then the machine's
/// differences (cpu, os), each group sorted by key. Lists of flags are compared as sets
/// ("+avx512f -sse3"). A subtree on one side only is one change ("loaded: added (41
/// entries)"), a value whose text did not change is none, and neither is a library of
/// "libraries" the later binary no longer records: it does not link it.
std::vector<FingerprintChange> diff_fingerprints(const json::object &before, const json::object &after);

/// The machine's differences in a diff, which diff_fingerprints lists last.
size_t machine_changes(const std::vector<FingerprintChange> &changes);

/// "key: old → new" / "key: added new" / "key: removed (was old)".
std::string describe_change(const FingerprintChange &c);

/// Every leaf as (dotted key, text), sorted by key: how `attngate env` prints it.
std::vector<std::pair<std::string, std::string>> flatten_fingerprint(const json::object &fp);

/// The fingerprint in a results.json or a fingerprint JSON file.
Result<json::object> load_fingerprint(const std::filesystem::path &path);

/// The same from text; `where` names it in errors.
Result<json::object> parse_fingerprint(std::string_view text, const std::string &where);

/// A short stable id of a fingerprint: the first 16 hex digits of the SHA-256 of its
/// compact JSON with keys sorted.
std::string fingerprint_id(const json::object &fp);

}  // namespace attngate
