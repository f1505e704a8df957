// Baseline files: parsing, serialising and conditional saving through the store.
#include "store/baseline_store.hpp"

#include "results/fingerprint.hpp"

#include "io/files.hpp"

namespace attngate {

namespace {
constexpr int kBaselineSchema = 1;
}  // namespace

const BaselineEntry *BaselineFile::find(std::string_view case_id, std::string_view kernel) const {
    for (const auto &e : entries)
        if (e.case_id == case_id && e.kernel == kernel) return &e;
    return nullptr;
}

void BaselineFile::upsert(BaselineEntry e) {
    for (auto &old : entries)
        if (old.case_id == e.case_id && old.kernel == e.kernel) {
            old = std::move(e);
            return;
        }
    entries.push_back(std::move(e));
}

Result<std::optional<BaselineFile>> load_baseline_file(Store &store, const std::string &key) {
    auto obj = store.get(key);
    if (!obj) return std::unexpected(obj.error());
    if (!*obj) return std::optional<BaselineFile>();
    auto f = parse_baseline_file((*obj)->bytes, store.where(key));
    if (!f) return std::unexpected(f.error());
    f->version = (*obj)->version;
    return std::optional<BaselineFile>(std::move(*f));
}

Result<BaselineFile> parse_baseline_file(std::string_view bytes, const std::string &file) {
    auto doc = parse_json(bytes, file);
    if (!doc) return std::unexpected(doc.error());
    BaselineFile f;
    ObjectReader r(*doc, file, "$");
    r.integer("schema_version", kBaselineSchema, kBaselineSchema, kBaselineSchema);
    const std::string check = r.required_string("check");
    const auto name = parse_enum<CheckName>(check);
    const auto empty = name ? empty_baseline_values(*name) : std::nullopt;
    if (r.ok() && !empty) r.fail_at("check", fmt::format("expected a check that keeps baselines (memory, perf, compile, instructions, numerics), got \"{}\"", check));
    if (name) f.check = *name;
    f.suite = r.required_string("suite");
    f.machine_class = r.string("machine_class", "");
    const json::value *entries = r.raw("entries");
    if (r.ok() && (!entries || !entries->is_array())) r.fail_at("entries", "expected an array");
    const json::value *fingerprints = r.raw("fingerprints");
    if (r.ok() && fingerprints && !fingerprints->is_object()) r.fail_at("fingerprints", "expected an object of fingerprints by id");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < entries->get_array().size(); ++i) {
        ObjectReader er(entries->get_array()[i], file, fmt::format("$.entries[{}]", i));
        BaselineEntry e;
        e.case_id = er.required_string("case");
        e.kernel = er.required_string("kernel");
        e.values = *empty;
        for (const char *key : {"values", "provenance"}) {
            const json::value *v = er.raw(key);
            if (er.ok() && (!v || !v->is_object())) er.fail_at(key, "expected an object");
            else if (v && er.ok() && std::string_view(key) == "provenance") {
                e.provenance = v->get_object();
                // The file keeps each fingerprint once; an entry names it by id.
                if (const json::value *id = e.provenance.if_contains("fingerprint_id")) {
                    const json::value *fp = id->is_string() && fingerprints ? fingerprints->get_object().if_contains(id->get_string()) : nullptr;
                    if (!fp || !fp->is_object())
                        er.fail_at("provenance.fingerprint_id", "expected the id of a fingerprint in $.fingerprints");
                    else {
                        e.provenance.erase("fingerprint_id");
                        e.provenance["fingerprint"] = fp->get_object();
                    }
                }
            }
            else if (v && er.ok())
                er.adopt(std::visit([&](auto &typed) { return from_json_object(v->get_object(), typed, file, er.path_of("values"), &e.extras); },
                                    e.values));
        }
        if (auto err = er.finish()) return std::unexpected(*err);
        f.entries.push_back(std::move(e));
    }
    return f;
}

json::object baseline_values_json(const BaselineEntry &e) {
    json::object values = std::visit([](const auto &typed) { return to_json_object(typed); }, e.values);
    for (const auto &kv : e.extras) values.emplace(kv.key(), kv.value());
    return values;
}

Result<std::string> save_baseline_file(Store &store, const std::string &key, const BaselineFile &f) {
    return store.put(key, serialize_baseline_file(f), Precondition::matches(f.version));
}

std::string serialize_baseline_file(const BaselineFile &f) {
    json::array entries;
    json::object fingerprints;  // each once, by id: a fingerprint is ~40 libraries, and most entries share one
    for (const auto &e : f.entries) {
        json::object provenance = e.provenance;
        if (const json::value *fp = provenance.if_contains("fingerprint"); fp && fp->is_object()) {
            const std::string id = fingerprint_id(fp->get_object());
            if (!fingerprints.contains(id)) fingerprints[id] = *fp;
            provenance.erase("fingerprint");
            provenance["fingerprint_id"] = id;
        }
        entries.push_back(json::object{{"case", e.case_id}, {"kernel", e.kernel}, {"values", baseline_values_json(e)}, {"provenance", std::move(provenance)}});
    }
    json::object doc{{"schema_version", kBaselineSchema}, {"check", enum_name(f.check)}, {"suite", f.suite}};
    if (!f.machine_class.empty()) doc["machine_class"] = f.machine_class;
    if (!fingerprints.empty()) doc["fingerprints"] = std::move(fingerprints);
    doc["entries"] = std::move(entries);
    return pretty_json(doc);
}

}  // namespace attngate
