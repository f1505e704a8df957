// Fuzz target: the .npy reader. Headers claiming huge shapes must be refused before any
// allocation; an accepted array holds exactly its shape's bytes and writes back unchanged.
#include "fuzz_target.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    auto a = parse_npy(bytes, "golden.npy");
    if (!fuzz::accepted(a, "golden.npy")) return 0;
    const size_t item = a->descr == "<f8" ? 8 : 4;
    if (a->size() < 0 || a->data.size() != static_cast<size_t>(a->size()) * item) fuzz::broken("data size is not the shape's", a->descr);
    auto back = parse_npy(serialize_npy(*a), "rewritten.npy");
    if (!back || back->shape != a->shape || back->data != a->data) fuzz::broken("the array does not survive a round trip", a->descr);
    return 0;
}
