// Suite parsing: the shipped suites load, and bad files get errors that name the file,
// the JSON path and what was expected.
#include <cmath>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "plan/suite.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
std::string error_of(const std::string &text) {
    test::TempDir dir;
    const auto path = dir / "bad.json";
    test::write_text(path, text);
    auto s = load_suite(path);
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::BadInput);
    CHECK_THAT(s.error().message, Catch::StartsWith(path.string() + ": "));
    return s.error().message;
}

std::string one_case(const std::string &fields) {
    return R"({"name": "t", "kernels": ["reference"], "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}, {"id": "b", )" +
           fields + "}]}";
}
}  // namespace

TEST_CASE("the shipped suites load", "[suite]") {
    for (const char *name : {"smoke", "nightly"}) {
        auto s = load_suite(std::filesystem::path(ATTNGATE_SOURCE_DIR) / "suites" / (std::string(name) + ".json"));
        REQUIRE(s);
        CHECK(s->name == name);
        CHECK(s->cases.size() >= 5);
    }
}

TEST_CASE("the smoke suite covers every feature, both dtypes and all built-in kernels", "[suite]") {
    auto s = load_suite(std::filesystem::path(ATTNGATE_SOURCE_DIR) / "suites" / "smoke.json");
    REQUIRE(s);
    bool f32 = false, bf16 = false, causal = false, window = false, segments = false, bias = false, softcap = false,
         gqa = false, dv = false, cross = false, decode = false, nan = false, paged = false, ragged = false;
    for (const auto &c : s->cases) {
        f32 |= c.dtype == ATTNGATE_DTYPE_F32;
        bf16 |= c.dtype == ATTNGATE_DTYPE_BF16;
        causal |= c.causal;
        window |= c.window_left >= 0 || c.window_right >= 0;
        segments |= c.segments > 0 || c.segments_per_token;
        bias |= !c.bias_shape.empty();
        softcap |= c.softcap > 0;
        gqa |= c.heads_q != c.heads_kv;
        dv |= c.head_dim_v != c.head_dim;
        cross |= c.seq_q != c.seq_k;
        decode |= c.seq_q == 1;
        nan |= c.nan.has_value();
        paged |= c.paged.has_value();
        ragged |= c.paged && c.paged->ragged();
    }
    CHECK((f32 && bf16 && causal && window && segments && bias && softcap && gqa && dv && cross && decode && nan && paged && ragged));
    std::set<std::string> kernels;
    for (const auto &k : s->kernels) kernels.insert(k.kernel);
    CHECK(kernels == std::set<std::string>{"reference", "native", "flash", "flash-decode"});
}

TEST_CASE("suite defaults fill in seq_k, heads_kv and head_dim_v", "[suite]") {
    test::TempDir dir;
    test::write_text(dir / "s.json", one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8)"));
    auto s = load_suite(dir / "s.json");
    REQUIRE(s);
    const CaseSpec &c = s->cases[1];
    CHECK(c.seq_k == 16);
    CHECK(c.heads_kv == 4);
    CHECK(c.head_dim_v == 8);
    CHECK(c.effective_scale() == Approx(1.0 / std::sqrt(8.0)));
    CHECK(c.timed);
    CHECK_FALSE(s->perf.require_verdict);
    test::write_text(dir / "t.json", one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "timed": false)"));
    auto t = load_suite(dir / "t.json");
    REQUIRE(t);
    CHECK_FALSE(t->cases[1].timed);  // kept for coverage only: the perf phase does not time it
}

TEST_CASE("bad suites name the file, the JSON path and what was expected", "[suite]") {
    CHECK_THAT(error_of(one_case(R"("seq_q": "16", "heads_q": 4, "head_dim": 8)")),
               Catch::Contains("$.cases[1].seq_q: expected an integer, got a string"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "colour": 1)")),
               Catch::Contains("$.cases[1].colour: unknown field"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 8, "heads_kv": 3, "head_dim": 8)")),
               Catch::Contains("$.cases[1].heads_kv: expected a divisor of heads_q (8), got 3"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 0)")),
               Catch::Contains("$.cases[1].head_dim: expected an integer >= 1, got 0"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "dtype": "fp8")")),
               Catch::Contains("$.cases[1].dtype: expected \"f32\" or \"bf16\""));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "window": [3])")),
               Catch::Contains("$.cases[1].window: expected [left, right]"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "bias": [1, 3, 1, 16])")),
               Catch::Contains("$.cases[1].bias[1]"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "nan": {"tensor": "k", "index": [0, 16, 0, 0]})")),
               Catch::Contains("$.cases[1].nan.index[1]: expected an index in [0, 16)"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "kernels": ["flash"])")),
               Catch::Contains("$.cases[1].kernels[0]: \"flash\" is not one of the suite's kernels"));
    CHECK_THAT(error_of(R"({"name": "t", "kernels": ["reference"], "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4},
                                                                              {"id": "a", "seq_q": 16, "heads_q": 4, "head_dim": 8}]})"),
               Catch::Contains("$.cases[1].id: duplicate case id \"a\""));
}

TEST_CASE("perf.threads sets the threads the kernels are timed on; unset, the suite's threads", "[suite]") {
    const auto suite_with = [](const std::string &top) {
        return R"({"name": "t", "kernels": ["reference"], )" + top + R"(, "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}]})";
    };
    test::TempDir dir;
    test::write_text(dir / "a.json", suite_with(R"("threads": 3, "perf": {"repetitions": 9})"));
    auto a = load_suite(dir / "a.json");
    REQUIRE(a);
    CHECK(a->timing_threads() == 3);
    test::write_text(dir / "b.json", suite_with(R"("threads": 3, "perf": {"threads": 1})"));
    auto b = load_suite(dir / "b.json");
    REQUIRE(b);
    CHECK(b->threads == 3);  // peaks and outputs still at the suite's threads
    CHECK(b->timing_threads() == 1);
    CHECK_THAT(error_of(suite_with(R"("perf": {"threads": -1})")), Catch::Contains("$.perf.threads: expected an integer in [0, 1024], got -1"));
    CHECK_THAT(error_of(suite_with(R"("perf": {"threads": "one"})")), Catch::Contains("$.perf.threads: expected an integer"));
}

namespace {
std::string with_known_races(const std::string &races) {
    return R"({"name": "t", "kernels": ["reference", "flash"], "known_races": )" + races +
           R"(, "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}]})";
}
}  // namespace

TEST_CASE("known_races: each entry names a suite kernel, the race, why and who reviewed it", "[suite]") {
    test::TempDir dir;
    test::write_text(dir / "s.json", with_known_races(R"([{"kernel": "flash", "race": "write/write on output 0 of pallas_call k",
                                                          "reason": "a scratch output the caller drops", "reviewed": "ana, 2026-12-05"}])"));
    auto s = load_suite(dir / "s.json");
    REQUIRE(s);
    REQUIRE(s->known_races.size() == 1);
    CHECK(s->known_races[0].kernel == "flash");
    CHECK(s->known_races[0].race == "write/write on output 0 of pallas_call k");
    CHECK(s->known_races[0].reviewed == "ana, 2026-12-05");

    const std::string entry = R"("race": "r", "reason": "why", "reviewed": "ana")";
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "splash", )" + entry + "}]")),
               Catch::Contains("$.known_races[0].kernel: \"splash\" is not one of the suite's kernels"));
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "flash", "race": "r", "reason": "why"}])")),
               Catch::Contains("$.known_races[0].reviewed"));
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "flash", "race": "r", "reason": " ", "reviewed": "ana"}])")),
               Catch::Contains("$.known_races[0].reason: expected a non-empty string"));
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "flash", "race": "`r`", "reason": "why", "reviewed": "ana"}])")),
               Catch::Contains("$.known_races[0].race: expected the signature without its backticks"));
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "flash", )" + entry + R"(, "until": "never"}])")),
               Catch::Contains("$.known_races[0].until: unknown field"));
    CHECK_THAT(error_of(with_known_races(R"([{"kernel": "flash", )" + entry + R"(}, {"kernel": "flash", )" + entry + "}]")),
               Catch::Contains("$.known_races[1]: kernel \"flash\" lists race \"r\" twice"));
    CHECK_THAT(error_of(with_known_races(R"({"kernel": "flash"})")), Catch::Contains("$.known_races: expected an array"));
}

TEST_CASE("a case over the memory budget is rejected before anything runs", "[suite]") {
    const std::string text = R"({"name": "t", "memory_budget_mb": 64, "kernels": ["reference"],
        "cases": [{"id": "huge", "seq_q": 8192, "heads_q": 16, "head_dim": 128}]})";
    CHECK_THAT(error_of(text), Catch::Contains("$.cases[0]: case \"huge\" needs about") && Catch::Contains("memory_budget_mb of 64 MiB"));
}

TEST_CASE("sizes near 2^63 fail the memory budget instead of overflowing", "[suite]") {
    // 2^62 used to wrap the size estimate to a small or negative number and pass.
    for (const char *field : {"seq_q", "seq_k", "heads_q", "head_dim", "head_dim_v", "batch"}) {
        std::map<std::string, int64_t> sizes{{"seq_q", 16}, {"heads_q", 4}, {"head_dim", 8}};
        sizes[field] = int64_t{1} << 62;
        std::string fields;
        for (const auto &[name, value] : sizes) fields += fmt::format("{}\"{}\": {}", fields.empty() ? "" : ", ", name, value);
        CHECK_THAT(error_of(one_case(fields)), Catch::Contains("$.cases[1]") && Catch::Contains("memory_budget_mb"));
    }
    CaseSpec c;
    c.batch = c.seq_q = c.seq_k = c.heads_q = c.heads_kv = c.head_dim = c.head_dim_v = int64_t{1} << 40;
    CHECK(c.estimated_bytes() == INT64_MAX);
}

TEST_CASE("a byte-order mark or bytes that are not UTF-8 are named, not a bare syntax error", "[suite]") {
    CHECK_THAT(error_of("\xEF\xBB\xBF{\"name\": \"t\"}"), Catch::Contains("(byte 0): invalid JSON: starts with a UTF-8 byte-order mark"));
    CHECK_THAT(error_of("{\"name\": \"t\xff\"}"), Catch::Contains("line 1, column 12 (byte 11): invalid JSON: not valid UTF-8"));
}

TEST_CASE("text after the JSON value is an error at its place, not ignored", "[suite]") {
    // A stray brace after an edit: the parser stops after one complete value.
    CHECK_THAT(error_of("{\"name\": \"t\"}\n\n}\n"), Catch::Contains("line 3, column 1 (byte 15): expected end of JSON, found more text"));
    CHECK_THAT(error_of("{\"name\": \"t\"} x"), Catch::Contains("line 1, column 15 (byte 14): expected end of JSON"));
    CHECK_THAT(error_of("{\"name\": \"t\"}\n \t\r\n"), !Catch::Contains("expected end of JSON"));  // whitespace is fine
}

TEST_CASE("the unknown-field message names every optional case field", "[suite]") {
    // scale, memory_calls and perf_threshold_pct were missing from the list when absent.
    const std::string message = error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "sclae": 0.5)"));
    CHECK_THAT(message, Catch::Contains("$.cases[1].sclae: unknown field"));
    for (const char *field : {"scale", "memory_calls", "perf_threshold_pct", "bitwise_stable", "deterministic"})
        CHECK_THAT(message, Catch::Contains(field));
}

TEST_CASE("suite numbers must be finite", "[suite]") {
    CHECK_THAT(error_of(R"({"name": "t", "timeout_s": 1e999, "kernels": ["reference"], "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}]})"),
               Catch::Contains("(byte 32): invalid JSON: a number too large for a double"));  // at the reader, with its byte
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "scale": 1e999)")),
               Catch::Contains("a number too large for a double"));
    CHECK_THAT(error_of(R"({"name": "t", "memory_budget_mb": 9007199254740992, "kernels": ["reference"], "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}]})"),
               Catch::Contains("$.memory_budget_mb"));
    // Used to say "expected an integer, got an integer".
    CHECK_THAT(error_of(R"({"name": "t", "seed": 18446744073709551615, "kernels": ["reference"], "cases": [{"id": "a", "seq_q": 8, "heads_q": 2, "head_dim": 4}]})"),
               Catch::Contains("$.seed: expected an integer <= 9223372036854775807, got 18446744073709551615"));
}

TEST_CASE("invalid JSON names the byte offset", "[suite]") {
    // Byte 27 is the stray "}" where an array element was expected.
    CHECK_THAT(error_of("{\"name\": \"t\",\n \"kernels\": [}"), Catch::Contains(": line 2, column 14 (byte 27): invalid JSON"));
}

TEST_CASE("missing top-level fields are named", "[suite]") {
    CHECK_THAT(error_of(R"({"name": "t", "kernels": ["reference"]})"), Catch::Contains("$.cases: expected a non-empty array"));
    CHECK_THAT(error_of(R"({"kernels": ["reference"], "cases": []})"), Catch::Contains("$.name: required field is missing"));
}

TEST_CASE("a number too large for a double is bad input, not infinity", "[suite]") {
    // Found by the baseline fuzzer: 1e84416 parsed as infinity, which the writer then
    // wrote as a token no JSON reader accepts, so a file attngate wrote was unreadable.
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "softcap": 10538E84416)")),
               Catch::Contains("a number too large for a double"));
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "softcap": -1e400)")),
               Catch::Contains("a number too large for a double"));
}

TEST_CASE("a key given twice in one object is an error, not last-wins", "[suite]") {
    // Boost.JSON keeps the last of two equal keys; a suite edited by hand could then run
    // with a setting its author did not see.
    CHECK_THAT(error_of(one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8, "causal": true, "causal": false)")),
               Catch::Contains("invalid JSON: key \"causal\" appears twice in one object"));
    // Equal after unescaping is equal; the top level is checked as well as nested objects.
    CHECK_THAT(error_of(R"({"name": "t", "n\u0061me": "u", "kernels": ["reference"], "cases": []})"),
               Catch::Contains("key \"name\" appears twice"));
    // The same key in two different objects is fine.
    test::TempDir dir;
    test::write_text(dir / "ok.json", one_case(R"("seq_q": 16, "heads_q": 4, "head_dim": 8)"));
    CHECK(load_suite(dir / "ok.json"));
}
