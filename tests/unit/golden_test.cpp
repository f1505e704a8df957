// Golden generation and verification, and a whole run through the library.
#include <fstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "io/files.hpp"
#include "run/golden_generate.hpp"
#include "store/golden.hpp"
#include "io/npy.hpp"
#include "run/run.hpp"
#include "store/directory_store.hpp"
#include "store/keys.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
const char *kTinySuite = R"({"name": "tiny", "seed": 5, "kernels": ["reference", "native", "flash"],
  "cases": [
    {"id": "plain", "seq_q": 40, "heads_q": 2, "head_dim": 8},
    {"id": "causal_bf16", "seq_q": 40, "seq_k": 70, "heads_q": 4, "heads_kv": 2, "head_dim": 8, "causal": true, "dtype": "bf16"}
  ]})";

Suite tiny(const test::TempDir &dir, const std::string &text = kTinySuite) {
    test::write_text(dir / "tiny.json", text);
    auto s = load_suite(dir / "tiny.json");
    REQUIRE(s);
    return *s;
}

/// The tiny suite with `from` replaced by `to` in its text, as the goldens of the unedited one
/// are read for it.
Result<GoldenManifest> edited_manifest(const test::TempDir &dir, DirectoryStore &store, std::string_view from, std::string_view to) {
    std::string edited = kTinySuite;
    edited.replace(edited.find(from), from.size(), to);
    return load_golden_manifest(tiny(dir, edited), store);
}
}  // namespace

TEST_CASE("golden generate writes numpy files and a manifest with hashes", "[golden]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    auto m = generate_goldens(s, store, nullptr);
    REQUIRE(m);
    REQUIRE(m->cases.size() == 2);
    const auto gdir = dir / "baselines" / "goldens" / s.name;
    for (const auto &e : m->cases) {
        auto bytes = read_file(gdir / e.file);
        REQUIRE(bytes);
        CHECK(sha256_hex(*bytes) == e.sha256);
        auto arr = parse_npy(*bytes, e.file);
        REQUIRE(arr);
        CHECK(arr->descr == "<f8");
        CHECK(arr->shape == e.shape);
        CHECK(e.inputs_sha256.size() == 64);
    }
    CHECK(m->find("causal_bf16")->straightforward_max_abs_error > m->find("plain")->straightforward_max_abs_error);
    auto loaded = load_golden_manifest(s, store);
    REQUIRE(loaded);
    CHECK(loaded->cases.size() == 2);
    // Deterministic: a second generation gives the same bytes.
    DirectoryStore store2(dir / "baselines2");
    auto again = generate_goldens(s, store2, nullptr);
    REQUIRE(again);
    CHECK(again->cases[1].sha256 == m->cases[1].sha256);
}

TEST_CASE("a flipped byte in a golden is reported as corrupt, not drift", "[golden]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    auto m = generate_goldens(s, store, nullptr);
    REQUIRE(m);
    const auto path = dir / "baselines" / "goldens" / s.name / m->cases[0].file;
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(200);
        f.put('\x7f');
    }
    auto g = load_golden(s, store, m->cases[0]);
    REQUIRE_FALSE(g);
    CHECK(g.error().kind == ErrorKind::Corrupt);
    CHECK_THAT(g.error().message, Catch::Contains("corrupt golden") && Catch::Contains(path.string()));
}

TEST_CASE("a missing golden says which command makes it", "[golden]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    auto m = load_golden_manifest(s, store);
    REQUIRE_FALSE(m);
    CHECK_THAT(m.error().message, Catch::Contains("attngate golden generate --suite"));
}

TEST_CASE("a suite edited after its goldens were made is stale, not drift", "[golden]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    REQUIRE(generate_goldens(s, store, nullptr));
    auto m = edited_manifest(dir, store, "\"seed\": 5", "\"seed\": 6");
    REQUIRE_FALSE(m);
    CHECK(m.error().kind == ErrorKind::BadInput);
    CHECK_THAT(m.error().message, Catch::Contains("inputs changed"));
}

TEST_CASE("a golden whose manifest shape is not the case's is bad input before anything is compared", "[golden]") {
    // A golden and manifest that agree with each other but not with the case (a hand-edited
    // or foreign manifest) used to reach the comparison with mismatched sizes.
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    auto m = generate_goldens(s, store, nullptr);
    REQUIRE(m);
    const auto gdir = dir / "baselines" / "goldens" / s.name;
    const std::vector<double> fewer(40 * 2 * 4, 0.5);
    const std::string bytes = serialize_npy(make_npy(std::span<const double>(fewer), {1, 40, 2, 4}));
    test::write_text(gdir / m->cases[0].file, bytes);
    auto manifest = read_file(gdir / "manifest.json");
    REQUIRE(manifest);
    auto doc = parse_json(*manifest, "manifest.json");
    REQUIRE(doc);
    auto &entry = doc->at("cases").as_array()[0].as_object();
    REQUIRE(entry.at("case").as_string() == m->cases[0].case_id);
    entry["shape"] = json::array{1, 40, 2, 4};
    entry["sha256"] = sha256_hex(bytes);
    test::write_text(gdir / "manifest.json", pretty_json(*doc));

    auto loaded = load_golden_manifest(s, store);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().kind == ErrorKind::BadInput);
    CHECK_THAT(loaded.error().message, Catch::Contains("case \"" + m->cases[0].case_id + "\": the golden's shape [1, 40, 2, 4] is not the case's output shape [1, 40, 2, 8]"));
}

TEST_CASE("run_suite checks every case x kernel and writes results.json", "[run]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    REQUIRE(generate_goldens(s, store, nullptr));
    RunOptions opt;
    opt.store = &store;
    opt.results_path = dir / "out" / "results.json";
    size_t calls = 0;
    Backends backends = test::builtin_backends();
    auto r = run_suite(s, backends, opt, {.on_case = [&](const CaseResult &, size_t done, size_t total) {
                           ++calls;
                           CHECK(done <= total);
                       }});
    REQUIRE(r);
    CHECK(calls == 6);
    CHECK(r->verdict() == Verdict::Pass);
    auto back = load_results(opt.results_path);
    REQUIRE(back);
    CHECK(back->complete);
    REQUIRE(back->results.size() == 6);
    const CaseResult *flash = back->find("causal_bf16", "flash");
    REQUIRE(flash);
    const GoldenMetrics &g = flash->checks.at(0).as<GoldenMetrics>();
    CHECK(*g.max_abs_error <= *g.tolerance);

    // Without a numerics baseline, a second run diffs each output against the last run's.
    CHECK(r->results[0].checks[1].check() == CheckName::Numerics);
    CHECK(r->results[0].checks[1].verdict == Verdict::Skip);
    auto r2 = run_suite(s, backends, opt);
    REQUIRE(r2);
    CHECK(r2->results[0].checks[1].check() == CheckName::Numerics);
    CHECK(r2->results[0].checks[1].reason == "bit-identical to the last run");
}

TEST_CASE("a manifest from before goldens kept the case's rules still loads, and one with them catches an edit", "[golden]") {
    test::TempDir dir;
    const Suite s = tiny(dir);
    DirectoryStore store(dir / "baselines");
    REQUIRE(generate_goldens(s, store, nullptr));
    const auto manifest = dir / "baselines" / "goldens" / s.name / "manifest.json";
    const std::string with_rules = read_file(manifest).value();
    REQUIRE(with_rules.find("\"rules_sha256\"") != std::string::npos);
    auto stale = edited_manifest(dir, store, "\"causal\": true", "\"causal\": false");
    REQUIRE_FALSE(stale);
    CHECK(stale.error().kind == ErrorKind::BadInput);
    CHECK_THAT(stale.error().message, Catch::Contains("case \"causal_bf16\": its scale, soft-cap, mask or dtype changed"));
    // Without the field (a manifest written before it), the same edit is not seen: nothing to compare.
    auto doc = boost::json::parse(with_rules);
    CHECK(doc.at("schema_version") == 2);
    doc.as_object()["schema_version"] = 1;  // as an attngate before the rules' hash wrote it
    for (auto &c : doc.at("cases").as_array()) c.as_object().erase("rules_sha256");
    REQUIRE(write_file_atomic(manifest, boost::json::serialize(doc)));
    CHECK(edited_manifest(dir, store, "\"causal\": true", "\"causal\": false"));
}
