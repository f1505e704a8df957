// Fuzz target: an adapter's kernel list, the body of GET /v1/kernels (decode_kernels and
// decode_load_errors in backend/remote_protocol.hpp), every byte of the input. A list that is
// accepted holds only kernels a plugin could offer: names by the one rule (no '+'), each once,
// texts without control characters, known feature bits; one that is refused says where.
#include <string>
#include <unordered_set>

#include "backend/remote_protocol.hpp"
#include "fuzz_target.hpp"

namespace {

using namespace attngate;

void check_kernels(const std::vector<KernelInfo> &ks) {
    std::unordered_set<std::string> names;
    for (const KernelInfo &k : ks) {
        if (!kernel_name_problem(k.name).empty()) fuzz::broken("a kernel name against the rule", k.name);
        if (!names.insert(k.name).second) fuzz::broken("a kernel listed twice", k.name);
        for (const std::string *text : {&k.version, &k.description})
            if (!kernel_text_problem(*text, "text").empty()) fuzz::broken("a kernel text with control characters", *text);
        if (k.features & ~static_cast<uint32_t>(ATTNGATE_FEATURE_ALL_PAGED)) fuzz::broken("an unknown feature bit", k.name);
        if (k.workspace_growth > ATTNGATE_WORKSPACE_QUADRATIC) fuzz::broken("an unknown workspace growth", k.name);
        if (k.origin != "fuzz") fuzz::broken("a kernel without its origin", k.origin);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view body(reinterpret_cast<const char *>(data), size);
    const std::string what = "GET http://127.0.0.1:1/v1/kernels";
    auto answer = decode_answer(200, body, what);
    if (!answer) {
        if (!answer.error().starts_with(what)) fuzz::broken("an answer error not naming the request", answer.error());
        return 0;
    }
    auto kernels = decode_kernels(*answer, "fuzz");
    if (kernels) check_kernels(*kernels);
    else if (!kernels.error().starts_with("$.kernels")) fuzz::broken("a refusal not naming its JSON path", kernels.error());
    for (const std::string &e : decode_load_errors(*answer))
        if (e.find(": ") == std::string::npos) fuzz::broken("a load error without its source", e);
    return 0;
}
