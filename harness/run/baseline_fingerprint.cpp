// Picking the baselines' fingerprint: of those the run's baselines were made with, the one this run's
// dependencies moved least from, the last accepted among equals.
#include "run/baseline_fingerprint.hpp"

#include <map>

#include "results/fingerprint.hpp"
#include "results/fingerprint_shape.hpp"
#include "store/golden.hpp"
#include "store/keys.hpp"

namespace attngate {

Result<json::object> baselines_fingerprint(Store &store, const Suite &suite, const Plan &plan, std::vector<const BaselineFile *> files,
                                           const std::optional<std::string> &perf_machine_class, const json::object &now) {
    std::optional<BaselineFile> perf;
    if (perf_machine_class) {
        auto key = baseline_key(CheckName::Perf, suite.name, *perf_machine_class);
        if (!key) return std::unexpected(key.error());
        auto file = load_baseline_file(store, *key);
        if (!file) return std::unexpected(file.error());
        perf = std::move(*file);
        if (perf) files.push_back(&*perf);
    }
    // Each distinct fingerprint once: how many dependencies moved since it, and when it was last accepted.
    struct Candidate {
        json::object fingerprint;
        size_t moved = 0;
        std::string date;  // ISO 8601 in UTC: ordered as text; "" for the goldens'
    };
    std::map<std::string, Candidate> candidates;
    const auto consider = [&](const json::object &fp, const std::string &date) {
        auto [it, added] = candidates.try_emplace(fingerprint_id(fp));
        if (added) {
            const auto diff = diff_fingerprints(fp, now);
            it->second = Candidate{fp, diff.size() - machine_changes(diff), date};
        }
        it->second.date = std::max(it->second.date, date);
    };
    for (const BaselineFile *file : files) {
        if (!file) continue;
        for (const auto &pc : plan.cases)
            for (const PlannedKernel *k : pc.kernels) {
                const BaselineEntry *e = file->find(pc.spec->id, k->spec.label());
                const json::value *fp = e ? e->provenance.if_contains("fingerprint") : nullptr;
                if (!fp || !fp->is_object() || !fp->get_object().contains("toolchain")) continue;  // accepted from results that had none
                // It is copied into results.json: a malformed one is bad input, not a bad results file.
                if (auto bad = fingerprint_shape_error(fp->get_object(), "$.provenance.fingerprint")) {
                    auto key = baseline_key(file->check, file->suite, file->machine_class);
                    return fail(ErrorKind::BadInput, "{}: the entry of {} / {}: at {}", key ? store.where(*key) : file->suite, pc.spec->id,
                                k->spec.label(), *bad);
                }
                const json::value *date = e->provenance.if_contains("date");
                consider(fp->get_object(), date && date->is_string() ? std::string(date->get_string()) : "");
            }
    }
    auto golden = load_golden_fingerprint(suite, store);
    if (!golden) return std::unexpected(golden.error());
    if (*golden && (*golden)->contains("toolchain")) consider(**golden, "");
    const Candidate *best = nullptr;
    for (const auto &[id, c] : candidates)
        if (!best || std::pair(c.moved, best->date) < std::pair(best->moved, c.date)) best = &c;
    if (best) return best->fingerprint;
    return golden->value_or(json::object{});
}

}  // namespace attngate
