// Fuzz target: the golden manifest reader, against a fixed one-case suite (the manifest is
// checked against the suite's cases: ids, shapes, input hashes).
#include "fuzz_target.hpp"
#include "plan/inputs.hpp"
#include "store/golden.hpp"

namespace {
const attngate::Suite &tiny_suite() {
    static const attngate::Suite s = [] {
        auto r = attngate::parse_suite(R"({"name": "fz", "seed": 1, "kernels": ["reference"],
            "cases": [{"id": "c1", "seq_q": 4, "seq_k": 6, "heads_q": 2, "heads_kv": 1, "head_dim": 4, "causal": true}]})",
                                       "fz.json");
        if (!r) attngate::fuzz::broken("the fixed suite does not load", r.error().message);
        return *r;
    }();
    return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    const Suite &suite = tiny_suite();
    auto m = parse_golden_manifest(text, "manifest.json", suite);
    if (!fuzz::accepted(m, "manifest.json")) return 0;
    for (const auto &c : suite.cases)
        if (const GoldenEntry *e = m->find(c.id); !e || e->shape != output_shape(c)) fuzz::broken("accepted a manifest that does not fit the case", c.id);
    return 0;
}
