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
#include "results/baseline_values.hpp"
#include "store/store.hpp"

namespace attngate {

struct BaselineEntry {
    std::string case_id;
    std::string kernel;
    BaselineValues values;    ///< what the check compares against; the file's check's kind
    json::object extras;      ///< values no field of that kind names, kept as read
    json::object provenance;  ///< date, user, git commit, machine, reason, fingerprint

    /// The values when the file is M's check, else nullptr.
    template <class M>
    const M *get() const { return std::get_if<M>(&values); }
};

struct BaselineFile {
    CheckName check = CheckName::Perf;
    std::string suite;
    std::string machine_class;  ///< empty for machine-independent checks
    std::vector<BaselineEntry> entries;
    std::string version;  ///< the store version it was read at; empty for a new file

    const BaselineEntry *find(std::string_view case_id, std::string_view kernel) const;
    /// The values of a case x kernel when the file is M's check and has an entry for it.
    template <class M>
    const M *values_of(std::string_view case_id, std::string_view kernel) const {
        const BaselineEntry *e = find(case_id, kernel);
        return e ? e->get<M>() : nullptr;
    }
    /// Replaces the entry for the same case x kernel, or appends.
    void upsert(BaselineEntry e);
};

/// The file at `key`, or nullopt when none exists yet; a malformed file is an error naming it.
Result<std::optional<BaselineFile>> load_baseline_file(Store &store, const std::string &key);

/// The same from bytes; `where` names it in errors.
Result<BaselineFile> parse_baseline_file(std::string_view bytes, const std::string &where);
std::string serialize_baseline_file(const BaselineFile &file);

/// An entry's values (and extras) as the file holds them.
json::object baseline_values_json(const BaselineEntry &e);

/// Written only if the stored file is still at file.version (absent when the version is
/// empty): a concurrent update is an ErrorKind::Conflict, never overwritten. Returns the
/// new version.
Result<std::string> save_baseline_file(Store &store, const std::string &key, const BaselineFile &file);

}  // namespace attngate
