// Fuzz target: the results.json reader, and what it writes back: a results file attngate
// accepted must serialize to one it accepts again (reports are made from written files).
#include "fuzz_target.hpp"
#include "io/json_io.hpp"
#include "results/results.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto doc = parse_json(text, "results.json");
    if (!fuzz::accepted(doc, "results.json")) return 0;
    auto r = results_from_json(*doc, "results.json");
    if (!fuzz::accepted(r, "results.json")) return 0;
    auto again = parse_json(pretty_json(to_json(*r)), "rewritten.json");
    if (!again) fuzz::broken("written results do not parse", again.error().message);
    auto back = results_from_json(*again, "rewritten.json");
    if (!back) fuzz::broken("written results are rejected", back.error().message);
    return 0;
}
