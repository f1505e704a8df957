// Directory baseline store.
#include "store/baseline_store.hpp"

#include "io/files.hpp"

namespace attngate {

namespace {
constexpr int kBaselineSchema = 1;

/// Machine class names become directory names: keep them to a safe alphabet.
std::string safe_component(const std::string &s) {
    std::string out;
    for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
    return out;
}
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

std::filesystem::path baseline_path(const std::filesystem::path &baselines, const std::string &check, const std::string &suite,
                                    const std::string &machine_class) {
    auto dir = baselines / check;
    if (!machine_class.empty()) dir /= safe_component(machine_class);
    return dir / (suite + ".json");
}

Result<std::optional<BaselineFile>> load_baseline_file(const std::filesystem::path &path) {
    if (!std::filesystem::exists(path)) return std::optional<BaselineFile>();
    auto doc = load_json_file(path);
    if (!doc) return std::unexpected(doc.error());
    const std::string file = path.string();
    BaselineFile f;
    ObjectReader r(*doc, file, "$");
    r.integer("schema_version", kBaselineSchema, kBaselineSchema, kBaselineSchema);
    f.check = r.required_string("check");
    f.suite = r.required_string("suite");
    f.machine_class = r.string("machine_class", "");
    const json::value *entries = r.raw("entries");
    if (r.ok() && (!entries || !entries->is_array())) r.fail_at("entries", "expected an array");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < entries->get_array().size(); ++i) {
        ObjectReader er(entries->get_array()[i], file, fmt::format("$.entries[{}]", i));
        BaselineEntry e;
        e.case_id = er.required_string("case");
        e.kernel = er.required_string("kernel");
        for (const char *key : {"values", "provenance"}) {
            const json::value *v = er.raw(key);
            if (er.ok() && (!v || !v->is_object())) er.fail_at(key, "expected an object");
            else if (v) (std::string_view(key) == "values" ? e.values : e.provenance) = v->get_object();
        }
        if (auto err = er.finish()) return std::unexpected(*err);
        f.entries.push_back(std::move(e));
    }
    return std::optional<BaselineFile>(std::move(f));
}

Result<void> save_baseline_file(const std::filesystem::path &path, const BaselineFile &f) {
    json::array entries;
    for (const auto &e : f.entries)
        entries.push_back(json::object{{"case", e.case_id}, {"kernel", e.kernel}, {"values", e.values}, {"provenance", e.provenance}});
    json::object doc{{"schema_version", kBaselineSchema}, {"check", f.check}, {"suite", f.suite}};
    if (!f.machine_class.empty()) doc["machine_class"] = f.machine_class;
    doc["entries"] = std::move(entries);
    return write_file_atomic(path, pretty_json(doc));
}

}  // namespace attngate
