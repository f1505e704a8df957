// Fuzz target: the baseline file reader, and the round trip through its writer.
#include "fuzz_target.hpp"
#include "store/baseline_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    auto f = parse_baseline_file(text, "baseline.json");
    if (!fuzz::accepted(f, "baseline.json")) return 0;
    auto back = parse_baseline_file(serialize_baseline_file(*f), "rewritten.json");
    if (!back) fuzz::broken("a written baseline file is rejected", back.error().message);
    if (back->entries.size() != f->entries.size()) fuzz::broken("entries lost in the round trip", f->suite);
    return 0;
}
