// Picking the baselines' fingerprint: the last-accepted entry the run uses, else the goldens'.
#include "run/baseline_fingerprint.hpp"

#include "results/fingerprint_shape.hpp"
#include "store/golden.hpp"
#include "store/keys.hpp"

namespace attngate {

Result<json::object> baselines_fingerprint(Store &store, const Suite &suite, const Plan &plan, std::vector<const BaselineFile *> files,
                                           const std::optional<std::string> &perf_machine_class) {
    std::optional<BaselineFile> perf;
    if (perf_machine_class) {
        auto key = baseline_key(CheckName::Perf, suite.name, *perf_machine_class);
        if (!key) return std::unexpected(key.error());
        auto file = load_baseline_file(store, *key);
        if (!file) return std::unexpected(file.error());
        perf = std::move(*file);
        if (perf) files.push_back(&*perf);
    }
    const json::object *latest = nullptr;
    std::string latest_date;  // ISO 8601 in UTC: ordered as text
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
                const std::string d = date && date->is_string() ? std::string(date->get_string()) : "";
                if (!latest || d > latest_date) latest = &fp->get_object(), latest_date = d;
            }
    }
    if (latest) return *latest;
    auto golden = load_golden_fingerprint(suite, store);
    if (!golden) return std::unexpected(golden.error());
    return golden->value_or(json::object{});
}

}  // namespace attngate
