// Baseline files: one JSON object per check and suite in the store
// (<check>/[<machine class>/]<suite>.json, see keys.hpp), each entry a case x kernel with
// the values its check compares against and the provenance of the decision to accept them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"
#include "store/store.hpp"

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
    std::string version;  ///< the store version it was read at; empty for a new file

    const BaselineEntry *find(std::string_view case_id, std::string_view kernel) const;
    /// Replaces the entry for the same case x kernel, or appends.
    void upsert(BaselineEntry e);
};

/// The file at `key`, or nullopt when none exists yet; a malformed file is an error naming it.
Result<std::optional<BaselineFile>> load_baseline_file(Store &store, const std::string &key);

/// The same from bytes; `where` names it in errors.
Result<BaselineFile> parse_baseline_file(std::string_view bytes, const std::string &where);
std::string serialize_baseline_file(const BaselineFile &file);

/// Written only if the stored file is still at file.version (absent when the version is
/// empty): a concurrent update is an ErrorKind::Conflict, never overwritten. Returns the
/// new version.
Result<std::string> save_baseline_file(Store &store, const std::string &key, const BaselineFile &file);

}  // namespace attngate
