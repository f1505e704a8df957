// Golden generation, manifest reading and verification.
#include "store/golden.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "attngate/builtin_kernels.hpp"
#include "io/files.hpp"
#include "plan/inputs.hpp"
#include "io/json_io.hpp"
#include "backend/memory.hpp"
#include "io/npy.hpp"
#include "plan/rng.hpp"
#include "results/fingerprint.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

constexpr int kManifestSchema = 1;
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
    e.straightforward_max_abs_error = r.number("straightforward_max_abs_error", 0.0);
    e.straightforward_rms_error = r.number("straightforward_rms_error", -1.0);
    e.output_max_abs = r.number("output_max_abs", 0.0);
    if (r.ok() && e.file.find('/') != std::string::npos) r.fail_at("file", "expected a file name without '/'");
    return r.finish();
}

}  // namespace

void calibrate_golden(GoldenEntry &e, std::span<const double> golden, std::span<const float> straightforward) {
    ATTNGATE_CHECK(golden.size() == straightforward.size());
    double max_err = 0.0, sum_sq = 0.0, max_out = 0.0;
    int64_t finite = 0;
    for (size_t i = 0; i < golden.size(); ++i) {
        if (!std::isfinite(golden[i])) continue;
        max_out = std::max(max_out, std::fabs(golden[i]));
        if (!std::isfinite(straightforward[i])) continue;
        const double d = std::fabs(static_cast<double>(straightforward[i]) - golden[i]);
        max_err = std::max(max_err, d);
        sum_sq += d * d;
        ++finite;
    }
    e.output_max_abs = max_out;
    e.straightforward_max_abs_error = max_err;
    e.straightforward_rms_error = finite ? std::sqrt(sum_sq / static_cast<double>(finite)) : 0.0;
}

const GoldenEntry *GoldenManifest::find(std::string_view case_id) const {
    for (const auto &e : cases)
        if (e.case_id == case_id) return &e;
    return nullptr;
}

Result<GoldenManifest> generate_goldens(const Suite &suite, Store &store,
                                        const std::function<void(const GoldenEntry &)> &progress) {
    GoldenManifest m;
    m.suite = suite.name;
    m.generator_version = kGeneratorVersion;
    m.reference_version = "reference 1.1.0";
    for (const auto &c : suite.cases) {
        const CaseInputs in = generate_inputs(suite, c);
        CountingAllocator alloc;
        std::vector<double> golden(static_cast<size_t>(output_elements(c)));
        std::vector<float> plain(golden.size());
        const attngate_problem p = make_problem(c, in, plain.data(), alloc.abi());
        char err[256] = {0};
        if (kernels::reference_forward_f64(p, golden.data(), err, sizeof err) != 0)
            return fail(ErrorKind::Infra, "case {}: reference kernel failed: {}", c.id, err);
        if (kernels::straightforward_forward(p, err, sizeof err) != 0)
            return fail(ErrorKind::Infra, "case {}: straightforward kernel failed: {}", c.id, err);
        // A scale of 1e300 made every golden element NaN, and every kernel then passed a case
        // that tests nothing: an output without one finite non-zero element is a bad case.
        if (std::none_of(golden.begin(), golden.end(), [](double x) { return std::isfinite(x) && x != 0.0; }))
            return fail(ErrorKind::BadInput, "{}: case {}: the reference output is all NaN, infinite or zero (scale, softcap or "
                        "amplitudes out of range?), so the case would test nothing", suite.file.string(), c.id);

        GoldenEntry e;
        e.case_id = c.id;
        e.file = c.id + ".npy";
        e.shape = output_shape(c);
        e.case_dtype = dtype_name(c.dtype);
        const std::string bytes = serialize_npy(make_npy(std::span<const double>(golden), e.shape));
        e.sha256 = sha256_hex(bytes);
        e.inputs_sha256 = in.sha256();
        calibrate_golden(e, golden, plain);
        auto key = golden_key(suite.name, e.file);
        if (!key) return std::unexpected(key.error());
        if (auto w = store.put(*key, bytes, Precondition::none()); !w) return std::unexpected(w.error());
        if (progress) progress(e);
        m.cases.push_back(std::move(e));
    }
    json::array cases;
    for (const auto &e : m.cases) cases.push_back(entry_to_json(e));
    json::object doc{{"schema_version", kManifestSchema},
                     {"suite", m.suite},
                     {"generator_version", m.generator_version},
                     {"reference", m.reference_version},
                     {"cases", cases}};
    auto key = golden_key(suite.name, kManifestName);
    if (!key) return std::unexpected(key.error());
    if (auto w = store.put(*key, pretty_json(doc), Precondition::none()); !w) return std::unexpected(w.error());
    return m;
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
    const std::string file = store.where(*key);
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
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
    r.integer("schema_version", kManifestSchema, kManifestSchema, kManifestSchema);
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
    }
    return m;
}

Result<std::vector<double>> load_golden(const Suite &suite, Store &store, const GoldenEntry &entry) {
    auto key = golden_key(suite.name, entry.file);
    if (!key) return std::unexpected(key.error());
    const std::string path = store.where(*key);
    auto obj = store.get(*key);
    if (!obj) return std::unexpected(obj.error());
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

Result<void> save_golden_fingerprint(const Suite &suite, Store &store, const json::object &fp) {
    auto key = golden_key(suite.name, "fingerprint.json");
    if (!key) return std::unexpected(key.error());
    if (auto w = store.put(*key, pretty_json(fp), Precondition::none()); !w) return std::unexpected(w.error());
    return {};
}

}  // namespace attngate
