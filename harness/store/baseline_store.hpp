// The baselines store (directory implementation): one JSON file per check and suite,
// baselines/<check>/[<machine class>/]<suite>.json, each entry a case x kernel with the
// values its check compares against and the provenance of the decision to accept them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

struct BaselineEntry {
    std::string case_id;
    std::string kernel;
    json::object values;      ///< what the check compares against
    json::object provenance;  ///< date, user, git commit, machine, reason, fingerprint
};

struct BaselineFile {
    std::string check;
    std::string suite;
    std::string machine_class;  ///< empty for machine-independent checks
    std::vector<BaselineEntry> entries;

    const BaselineEntry *find(std::string_view case_id, std::string_view kernel) const;
    /// Replaces the entry for the same case x kernel, or appends.
    void upsert(BaselineEntry e);
};

std::filesystem::path baseline_path(const std::filesystem::path &baselines, const std::string &check,
                                    const std::string &suite, const std::string &machine_class = "");

/// The file, or nullopt when none exists yet; a malformed file is an error naming it.
Result<std::optional<BaselineFile>> load_baseline_file(const std::filesystem::path &path);

/// Written atomically: an interrupted update leaves the old baseline whole.
Result<void> save_baseline_file(const std::filesystem::path &path, const BaselineFile &file);

}  // namespace attngate
