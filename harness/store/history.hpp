// The history in the store: one small object per run under
// history/<suite>/<machine class>/<YYYY-MM>/<run id>.json, written "must not exist" under
// a unique run id (so concurrent appends from a fleet can never overwrite each other), and
// each distinct fingerprint once under history/<suite>/fingerprints/<id>.json so a trend
// can name what changed where the fingerprint changed. Reading the last N runs costs a
// listing and N small reads, however many years are stored.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "results/history_record.hpp"
#include "results/results.hpp"
#include "store/store.hpp"

namespace attngate {

/// A unique run id that sorts by time: the start time compacted, then the append's time in
/// microseconds (runs that started in the same second sort in the order they were
/// appended), then 8 random hex digits (two machines appending at once).
std::string new_run_id(const std::string &started_at);

/// Why a run is no data point of the history: it did not finish ("$.complete is false: ..."),
/// or nothing ran (every kernel source failed to load); empty when it is one.
std::string not_a_data_point(const RunResults &results);

/// Appends a run's record (and its fingerprint, when new), with the whole results beside it
/// under results/<suite>/<machine class>/<YYYY-MM>/<run id>.json; returns the record's key.
/// The same results appended before (by content, history/<suite>/appended/<sha256>), and
/// results that are no data point (not_a_data_point), are bad input naming why.
Result<std::string> append_history(Store &store, const RunResults &results);

/// Appends the perf rows of `results` that `baseline update --checks perf` accepted
/// ("case/kernel" labels) as a record of their perf windows, without the whole results.
/// A row whose time moved to a new level (a regression, an improvement or a stale
/// baseline) starts its window again here ("b"). Results already in the history add only
/// such rows (the others' values are there). Returns the record's key; empty when there
/// was nothing to record.
Result<std::string> append_perf_window(Store &store, const RunResults &results, const std::set<std::string> &accepted);

struct History {
    std::vector<HistoryRecord> records;             ///< oldest first
    std::map<std::string, json::object> fingerprints;  ///< by fingerprint id, those the records name
};

/// The last `last` runs (0: all) of a suite on a machine class, with their fingerprints.
/// A missing fingerprint object is skipped (its runs still count); a malformed record is
/// an error naming its key.
Result<History> load_history(Store &store, const std::string &suite, const std::string &machine_class, size_t last);

}  // namespace attngate
