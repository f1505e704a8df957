// Goldens in the store: the manifest read and verified, each golden read, written and
// checked against its hash. Making them is run/golden_generate.cpp's.
#include "store/golden.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/ranges.h>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"
#include "io/rng.hpp"
#include "plan/inputs.hpp"
#include "results/fingerprint.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

/// 2: each case also records rules_sha256. An attngate that reads only 1 then says the
/// manifest is newer than it, rather than tripping on an unknown field; 1 is still read.
constexpr int kManifestSchema = 2;
constexpr int kOldestManifestSchema = 1;
constexpr const char *kManifestName = "manifest.json";

std::string regenerate_hint(const Suite &suite) {
    return fmt::format("attngate golden generate --suite {}", suite.file.string());
}

json::value entry_to_json(const GoldenEntry &e) {
    json::array shape(e.shape.begin(), e.shape.end());
    return json::object{{"case", e.case_id},
                        {"file", e.file},
                        {"shape", shape},
                        {"dtype", e.dtype},
                        {"case_dtype", e.case_dtype},
                        {"sha256", e.sha256},
                        {"inputs_sha256", e.inputs_sha256},
                        {"rules_sha256", e.rules_sha256},
                        {"straightforward_max_abs_error", e.straightforward_max_abs_error},
                        {"straightforward_rms_error", e.straightforward_rms_error},
                        {"output_max_abs", e.output_max_abs}};
}

std::optional<Error> entry_from_json(const json::value &v, const std::string &file, const std::string &path, GoldenEntry &e) {
    ObjectReader r(v, file, path);
    e.case_id = r.required_string("case");
    e.file = r.required_string("file");
    e.shape = r.integer_array("shape", {});
    e.dtype = r.string("dtype", "float64");
    e.case_dtype = r.required_string("case_dtype");
    e.sha256 = r.required_string("sha256");
    e.inputs_sha256 = r.required_string("inputs_sha256");
    e.rules_sha256 = r.string("rules_sha256", "");
    e.straightforward_max_abs_error = r.number("straightforward_max_abs_error", 0.0);
    e.straightforward_rms_error = r.number("straightforward_rms_error", -1.0);
    e.output_max_abs = r.number("output_max_abs", 0.0);
    if (r.ok() && e.file.find('/') != std::string::npos) r.fail_at("file", "expected a file name without '/'");
    return r.finish();
}

}  // namespace

const GoldenEntry *GoldenManifest::find(std::string_view case_id) const {
    for (const auto &e : cases)
        if (e.case_id == case_id) return &e;
    return nullptr;
}

GoldenStaging::GoldenStaging(const Suite &suite, Store &store)
    : store_(store),
      folder_(fmt::format("{}.tmp-{:016x}", suite.name, (uint64_t{std::random_device{}()} << 32) | std::random_device{}())),
      suite_(suite.name) {}

GoldenStaging::~GoldenStaging() {
    if (!committed_) (void)store_.remove_prefix("goldens/" + folder_ + "/");  // best effort: the old goldens are intact either way
}

Result<void> GoldenStaging::put(std::string_view file, std::string_view bytes) {
    auto key = golden_key(folder_, file);
    if (!key) return std::unexpected(key.error());
    if (auto w = store_.put(*key, bytes, Precondition::none()); !w) return std::unexpected(w.error());
    return {};
}

Result<void> GoldenStaging::save_golden(const GoldenEntry &entry, const std::string &npy_bytes) { return put(entry.file, npy_bytes); }

Result<void> GoldenStaging::save_fingerprint(const json::object &fp) { return put("fingerprint.json", pretty_json(fp)); }

Result<void> GoldenStaging::commit() {
    if (auto r = store_.replace_prefix("goldens/" + folder_ + "/", "goldens/" + suite_ + "/"); !r) return r;
    committed_ = true;
    return {};
}

Result<void> GoldenStaging::save_manifest(const GoldenManifest &m) {
    json::array cases;
    for (const auto &e : m.cases) cases.push_back(entry_to_json(e));
    json::object doc{{"schema_version", kManifestSchema},
                     {"suite", m.suite},
                     {"generator_version", m.generator_version},
                     {"reference", m.reference_version},
                     {"cases", cases}};
    return put(kManifestName, pretty_json(doc));
}

Result<bool> has_golden_manifest(const Suite &suite, Store &store) {
    auto key = golden_key(suite.name, kManifestName);
    if (!key) return std::unexpected(key.error());
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
    return obj->has_value();
}

Result<GoldenManifest> load_golden_manifest(const Suite &suite, Store &store) {
    auto key = golden_key(suite.name, kManifestName);
    if (!key) return std::unexpected(key.error());
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
    const std::string file = store.where(*key);  // after the read: the layer it came from
    if (!*obj)
        return fail(ErrorKind::BadInput, "{}: missing golden manifest for suite \"{}\"; make it with: {}", file, suite.name,
                    regenerate_hint(suite));
    return parse_golden_manifest((*obj)->bytes, file, suite);
}

Result<GoldenManifest> parse_golden_manifest(std::string_view bytes, const std::string &file, const Suite &suite) {
    auto doc = parse_json(bytes, file);
    if (!doc) return std::unexpected(doc.error());
    GoldenManifest m;
    ObjectReader r(*doc, file, "$");
    r.integer("schema_version", kManifestSchema, kOldestManifestSchema, kManifestSchema);
    m.suite = r.required_string("suite");
    m.generator_version = static_cast<int>(r.required_integer("generator_version", 0));
    m.reference_version = r.string("reference", "");
    const json::value *cases = r.raw("cases");
    if (r.ok() && (!cases || !cases->is_array())) r.fail_at("cases", "expected an array");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < cases->get_array().size(); ++i) {
        GoldenEntry e;
        if (auto err = entry_from_json(cases->get_array()[i], file, fmt::format("$.cases[{}]", i), e)) return std::unexpected(*err);
        m.cases.push_back(std::move(e));
    }
    if (m.generator_version != kGeneratorVersion)
        return fail(ErrorKind::BadInput, "{}: $.generator_version: goldens were made with input generator {}, this attngate has {}; regenerate with: {}",
                    file, m.generator_version, kGeneratorVersion, regenerate_hint(suite));
    for (const auto &c : suite.cases) {
        const GoldenEntry *e = m.find(c.id);
        if (!e) return fail(ErrorKind::BadInput, "{}: missing golden for case \"{}\"; make it with: {}", file, c.id, regenerate_hint(suite));
        if (e->shape != output_shape(c))
            return fail(ErrorKind::BadInput, "{}: case \"{}\": the golden's shape [{}] is not the case's output shape [{}]; regenerate with: {}",
                        file, c.id, fmt::join(e->shape, ", "), fmt::join(output_shape(c), ", "), regenerate_hint(suite));
        if (e->inputs_sha256 != generate_inputs(suite, c).sha256())
            return fail(ErrorKind::BadInput, "{}: case \"{}\": its inputs changed since the golden was made (suite edited?); regenerate with: {}",
                        file, c.id, regenerate_hint(suite));
        if (!e->rules_sha256.empty() && e->rules_sha256 != c.rules_sha256())
            return fail(ErrorKind::BadInput, "{}: case \"{}\": its scale, soft-cap, mask or dtype changed since the golden was made "
                        "(suite edited?); regenerate with: {}", file, c.id, regenerate_hint(suite));
    }
    return m;
}

Result<std::vector<double>> load_golden(const Suite &suite, Store &store, const GoldenEntry &entry) {
    auto key = golden_key(suite.name, entry.file);
    if (!key) return std::unexpected(key.error());
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
    const std::string path = store.where(*key);  // after the read: the layer it came from
    if (!*obj)
        return fail(ErrorKind::BadInput, "{}: missing golden for case \"{}\"; make it with: {}", path, entry.case_id, regenerate_hint(suite));
    const std::string &bytes = (*obj)->bytes;
    const std::string got = sha256_hex(bytes);
    if (got != entry.sha256)
        return fail(ErrorKind::Corrupt, "{}: corrupt golden: SHA-256 {} does not match the manifest's {}; restore it from git or regenerate with: {}",
                    path, got, entry.sha256, regenerate_hint(suite));
    auto arr = parse_npy(bytes, path);
    if (!arr) return std::unexpected(arr.error());
    if (arr->descr != "<f8" || arr->shape != entry.shape)
        return fail(ErrorKind::BadInput, "{}: expected float64 of the manifest's shape", path);
    auto s = arr->as<double>();
    return std::vector<double>(s.begin(), s.end());
}

Result<std::optional<json::object>> load_golden_fingerprint(const Suite &suite, Store &store) {
    auto key = golden_key(suite.name, "fingerprint.json");
    if (!key) return std::unexpected(key.error());
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
    if (!*obj) return std::optional<json::object>();
    auto fp = parse_fingerprint((*obj)->bytes, store.where(*key));
    if (!fp) return std::unexpected(fp.error());
    return std::optional<json::object>(std::move(*fp));
}

}  // namespace attngate
