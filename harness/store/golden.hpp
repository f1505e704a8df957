// Goldens: each case's fp64 reference output as .npy under goldens/<suite>/ in the store,
// with a manifest recording hashes and the straightforward-implementation error that
// calibrates the tolerance, and the fingerprint they were made with.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"
#include "plan/suite.hpp"
#include "store/store.hpp"

namespace attngate {

struct GoldenEntry {
    std::string case_id;
    std::string file;  ///< relative to the manifest
    std::vector<int64_t> shape;
    std::string dtype = "float64";
    std::string case_dtype;  ///< the kernels' operand dtype
    std::string sha256;
    std::string inputs_sha256;
    std::string rules_sha256;  ///< CaseSpec::rules_sha256(); empty in a manifest from before it was kept
    /// Max abs error of the straightforward implementation at the case's precision.
    double straightforward_max_abs_error = 0.0;
    /// Its RMS error over the finite elements; negative when the manifest predates it.
    double straightforward_rms_error = -1.0;
    double output_max_abs = 0.0;  ///< max |golden| over finite elements
};

struct GoldenManifest {
    std::string suite;
    int generator_version = 0;
    std::string reference_version;
    std::vector<GoldenEntry> cases;

    const GoldenEntry *find(std::string_view case_id) const;
};

/// A new generation of a suite's goldens is written whole into a fresh folder beside the
/// old one (goldens/<suite>.tmp-<random>/), then switched in with one rename: a failure or a
/// kill part-way leaves the old goldens as they were.
class GoldenStaging {
public:
    GoldenStaging(const Suite &suite, Store &store);
    /// Removes what was written unless commit() switched it in.
    ~GoldenStaging();
    GoldenStaging(const GoldenStaging &) = delete;
    GoldenStaging &operator=(const GoldenStaging &) = delete;

    /// Writes one golden's .npy bytes under the entry's file name.
    Result<void> save_golden(const GoldenEntry &entry, const std::string &npy_bytes);
    /// Writes the manifest (after every golden it lists).
    Result<void> save_manifest(const GoldenManifest &manifest);
    Result<void> save_fingerprint(const json::object &fp);
    /// Puts the folder in place of the suite's goldens, in one step.
    Result<void> commit();

private:
    Result<void> put(std::string_view file, std::string_view bytes);
    Store &store_;
    std::string folder_;  ///< "<suite>.tmp-<random>", under goldens/
    std::string suite_;
    bool committed_ = false;
};

/// True when the store holds a manifest for the suite.
Result<bool> has_golden_manifest(const Suite &suite, Store &store);

/// Reads the manifest and checks that it covers the suite's cases and that its inputs
/// hashes still match the generator: a stale golden is bad input, not drift.
Result<GoldenManifest> load_golden_manifest(const Suite &suite, Store &store);
/// The same checks on a manifest's bytes; `file` names it in messages.
Result<GoldenManifest> parse_golden_manifest(std::string_view bytes, const std::string &file, const Suite &suite);

/// Loads one golden and verifies its SHA-256 against the manifest (ErrorKind::Corrupt).
Result<std::vector<double>> load_golden(const Suite &suite, Store &store, const GoldenEntry &entry);

/// The fingerprint the suite's goldens were made with; nullopt when none was recorded.
Result<std::optional<json::object>> load_golden_fingerprint(const Suite &suite, Store &store);

}  // namespace attngate
