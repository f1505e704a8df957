// Updating baselines from a run's results: which case x kernel rows would change, by how
// much, and writing the accepted ones with provenance. The CLI asks the questions; this
// module only computes and writes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/baseline_store.hpp"
#include "results/results.hpp"

namespace attngate {

/// A check that has baselines. What it keeps is its BaselineValues record (the namesakes
/// of its metrics), and the number people compare old -> new is that record's headline().
struct BaselineKind {
    CheckName check;
    bool per_machine = false;  ///< stored under a machine-class directory
    const char *name() const { return enum_name(check); }
};

/// The registry of checks that have baselines.
const std::vector<BaselineKind> &baseline_kinds();
const BaselineKind *find_baseline_kind(std::string_view check);

/// What a check's result would put into its baseline, nullopt for a check without baselines.
std::optional<BaselineValues> baseline_values_of(const CheckResult &check);

struct UpdateRow {
    std::string case_id, kernel;
    std::optional<double> old_value;  ///< nullopt: no baseline yet
    double new_value = 0.0;
    Verdict verdict = Verdict::Pass;  ///< the check's verdict in the results
    /// Why accepting it would be wrong, refused unless forced: "its golden check failed", or a
    /// memory failure no baseline changes ("it leaks: heap leak: ..."). Empty: acceptable.
    std::string refused;
    /// What a review shows: no baseline yet, a check that did not pass, or an exact value that
    /// moved (BaselineValues' moved_from). An unchanged row is kept as it is stored.
    bool changed = true;
    std::optional<BaselineValues> values;  ///< what would be stored
    std::optional<BaselineValues> old_values;  ///< what is stored now; nullopt: no baseline yet
    std::string label() const { return case_id + "/" + kernel; }
    /// Percent change, or nullopt without an old value.
    std::optional<double> change_pct() const;
};

/// Rows for every case x kernel of `results` that ran `kind.check`, limited to labels
/// matching the shell glob `only` ("case/kernel"; empty: all).
std::vector<UpdateRow> plan_update(const RunResults &results, const BaselineKind &kind, const BaselineFile *existing,
                                   const std::string &only);

/// Who, when, why and on what: stored with every accepted entry.
json::object make_provenance(const std::string &reason, const std::string &machine_class, const json::object &fingerprint);

/// The machine class baselines are kept per: CPU model, core count and an optional name.
std::string machine_class(const std::string &name, const std::string &dispatch_path);

/// Stores accepted rows into file (created when absent) and writes it only if the stored
/// file is still the one that was read (file.version): a concurrent update is a Conflict.
Result<void> apply_update(Store &store, const std::string &key, BaselineFile file, const std::vector<UpdateRow> &accepted,
                          const json::object &provenance);

/// What another writer changed between `read` (what this update started from; nullopt
/// when there was no file) and `now`: one line per case x kernel added, changed or
/// removed, with who accepted it, when and why.
std::vector<std::string> describe_baseline_changes(const std::optional<BaselineFile> &read, const std::optional<BaselineFile> &now);

}  // namespace attngate
