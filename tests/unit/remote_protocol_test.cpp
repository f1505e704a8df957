// The remote protocol's decoders: what an adapter may answer, and what is outside the protocol.
#include <chrono>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "backend/remote_protocol.hpp"

using namespace attngate;

namespace {
boost::json::object parse(const char *text) { return boost::json::parse(text).as_object(); }
}  // namespace

TEST_CASE("memory counts out of range, negative, fractional or non-numeric are outside the protocol", "[remote]") {
    // Issue 24: 1e19 and 1e300 went through an unchecked double -> int64 conversion (UB):
    // every sample came out INT64_MIN and the memory check said "no leak".
    const std::pair<const char *, const char *> bad[] = {
        {R"({"live_arrays": [1e19, 2e19]})", "$.live_arrays[0]: expected a count"},
        {R"({"rss_bytes": [1, 1e300]})", "$.rss_bytes[1]: expected a count"},
        {R"({"live_array_bytes": [-1, 2]})", "$.live_array_bytes[0]"},
        {R"({"rss_bytes": [1.5, 2]})", "$.rss_bytes[0]"},
        {R"({"rss_bytes": ["1", 2]})", "$.rss_bytes[0]"},
        {R"({"rss_bytes": [18446744073709551615, 2]})", "$.rss_bytes[0]"},
        {R"({"rss_bytes": [1, 2, 3]})", "one count per measured call (2), got 3"},
        {R"({"rss_bytes": 7})", "expected an array of counts"},
        {R"({"device_peak_bytes": -5})", "$.device_peak_bytes"},
    };
    for (const auto &[text, words] : bad) {
        INFO(text);
        auto m = decode_memory(parse(text), 2);
        REQUIRE_FALSE(m);
        CHECK_THAT(m.error(), Catch::Contains(words));
    }
    auto ok = decode_memory(parse(R"({"live_arrays": [13, 13.0], "rss_bytes": [9007199254740992, 0], "device_bytes_in_use": [null, 5],
                                      "device_peak_bytes": null})"), 2);
    REQUIRE(ok);
    CHECK(ok->live_arrays == std::vector<int64_t>{13, 13});
    CHECK(ok->rss_bytes == std::vector<int64_t>{int64_t{1} << 53, 0});
    CHECK(ok->device_bytes_in_use.empty());  // a null element: not measured, never 0
    CHECK(ok->device_peak_bytes == -1);
}

TEST_CASE("remote times must be finite and within a day; samples positive", "[remote]") {
    for (const char *text : {R"({"run_s": -1e308})", R"({"compile_s": 1e308})", R"({"compile_cpu_s": -0.5})", R"({"run_s": "fast"})",
                             R"({"run_s": 90000})"}) {
        INFO(text);
        auto r = decode_run(parse(text));
        REQUIRE_FALSE(r);
        CHECK_THAT(r.error(), Catch::Contains("expected a time in [0, 86400] s"));
    }
    auto r = decode_run(parse(R"({"compile_cpu_s": 1.5, "compile_s": 9.0, "run_s": 0.25})"));
    REQUIRE(r);
    CHECK(*r->compile_s == 1.5);  // CPU time first: it does not grow with the machine's load
    CHECK(*r->run_s == 0.25);
    auto none = decode_run(parse(R"({"compile_s": null})"));
    REQUIRE(none);
    CHECK_FALSE(none->compile_s);

    for (const char *text : {R"({"samples_s": [0.001, -1]})", R"({"samples_s": [0]})", R"({"samples_s": [1e308]})", R"({"samples_s": []})",
                             R"({"samples_s": [0.1], "compile_s": -3})"}) {
        INFO(text);
        CHECK_FALSE(decode_time(parse(text)));
    }
    auto t = decode_time(parse(R"({"samples_s": [0.001, 0.002], "compile_s": null})"));
    REQUIRE(t);
    CHECK(t->samples_s.size() == 2);
}

TEST_CASE("remote kernel names are held to the plugin rule, adapter names too", "[remote]") {
    for (const char *name : {"x\\u001b[2K\\rGATE PASSED", "x\\u001b]0;pwned\\u0007", "<img src=x onerror=alert(1)>", "../../x", "..", "", ".hidden"}) {
        INFO(name);
        auto k = decode_kernels(parse(fmt::format(R"({{"kernels": [{{"name": "{}"}}]}})", name).c_str()), "adapter");
        REQUIRE_FALSE(k);
        CHECK_THAT(k.error(), Catch::StartsWith("$.kernels[0]: kernel name"));
        CHECK(k.error().find('\x1b') == std::string::npos);
    }
    auto texts = decode_kernels(parse(R"({"kernels": [{"name": "ok", "version": "1\u001b[31m"}]})"), "adapter");
    REQUIRE_FALSE(texts);
    CHECK_THAT(texts.error(), Catch::Contains("version holds control characters"));
    auto twice = decode_kernels(parse(R"({"kernels": [{"name": "ok"}, {"name": "ok"}]})"), "adapter");
    REQUIRE_FALSE(twice);
    auto good = decode_kernels(parse(R"({"kernels": [{"name": "pallas-flash", "version": "jax 0.10.2", "features": ["causal", "bf16"]}]})"), "a");
    REQUIRE(good);
    CHECK((*good)[0].features == (ATTNGATE_FEATURE_CAUSAL | ATTNGATE_FEATURE_BF16));
    CHECK_FALSE(decode_hello(parse(R"({"protocol": 1, "adapter": "a/../../b"})")));
    CHECK_FALSE(decode_hello(parse(R"({"protocol": 2, "adapter": "a"})")));
    CHECK(decode_hello(parse(R"({"protocol": 1, "adapter": "attngate-jax", "fingerprint": {"jax": "0.10.2"}})")));
}

TEST_CASE("an answer that is not one JSON object, or a key twice, is outside the protocol", "[remote]") {
    CHECK(decode_answer(200, "", "GET x"));  // 204-like: an empty object
    CHECK_THAT(decode_answer(200, "<html>", "POST x").error(), Catch::StartsWith("POST x: the answer is not a JSON object"));
    CHECK_THAT(decode_answer(200, R"({"ok": true, "ok": false})", "POST x").error(), Catch::Contains("twice"));
    CHECK_THAT(decode_answer(500, R"({"error": "boom"})", "POST x").error(), Catch::Contains("HTTP 500: boom"));
    CHECK_FALSE(decode_answer(200, "[1]", "POST x"));
}

TEST_CASE("a long kernel list is checked for duplicates in linear time", "[remote]") {
    // Issue 38 #8: a scan of the kernels so far per kernel took 40 s for 100k; 200k would
    // take minutes. Linear, 200k take well under a second; 20 s leaves room for a loaded CI.
    constexpr size_t n = 200000;
    boost::json::array list;
    for (size_t i = 0; i < n; ++i) list.push_back(boost::json::object{{"name", fmt::format("k{}", i)}});
    const boost::json::object body{{"kernels", list}};
    const auto t0 = std::chrono::steady_clock::now();
    auto all = decode_kernels(body, "adapter");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(all);
    CHECK(all->size() == n);
    CHECK(seconds < 20.0);
    list.push_back(boost::json::object{{"name", "k123456"}});
    auto twice = decode_kernels(boost::json::object{{"kernels", list}}, "adapter");
    REQUIRE_FALSE(twice);
    CHECK(twice.error() == fmt::format("$.kernels[{}]: kernel \"k123456\" is listed twice", n));
}

TEST_CASE("a declined call says whether the kernel still lowers for the TPU; only a skip can", "[remote]") {
    auto ok = decode_declined(parse(R"({"ok": true, "run_s": 0.1})"));
    CHECK_FALSE(ok);  // not declined at all
    auto lowers = decode_declined(parse(R"({"ok": false, "unsupported": "the interpreter fails", "lowers": true})"));
    REQUIRE(lowers);
    CHECK(lowers->unsupported == "the interpreter fails");
    CHECK(lowers->lowers);
    auto plain = decode_declined(parse(R"({"ok": false, "unsupported": "causal alignment is top-left"})"));
    REQUIRE(plain);
    CHECK_FALSE(plain->lowers);  // the default: a skip with nothing more to ask
    // Only a boolean true counts, and only beside "unsupported": an error already has its program asked for.
    CHECK_FALSE(decode_declined(parse(R"({"ok": false, "unsupported": "x", "lowers": "yes"})"))->lowers);
    auto error = decode_declined(parse(R"({"ok": false, "error": "ValueError: boom", "lowers": true})"));
    REQUIRE(error);
    CHECK(error->error == "ValueError: boom");
    CHECK_FALSE(error->lowers);
}
