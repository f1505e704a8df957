// Fuzz target: the remote protocol's answers (backend/remote_protocol.hpp), as an adapter
// sends them. The first byte picks the endpoint and the HTTP status; the rest is the body.
// Whatever is accepted must hold only what the protocol allows: counts in [0, 2^53], times
// finite and in range, kernel names that are safe on a terminal and in a file name.
#include <cmath>

#include "backend/remote_protocol.hpp"
#include "fuzz_target.hpp"
#include "io/json_io.hpp"

namespace {

using namespace attngate;

void check_time(std::optional<double> t, bool positive) {
    if (t && (!std::isfinite(*t) || *t < 0 || (positive && *t == 0) || *t > kMaxRemoteSeconds)) fuzz::broken("a time out of range", std::to_string(*t));
}

void check_count(int64_t n, bool may_be_absent) {
    if (n < (may_be_absent ? -1 : 0) || static_cast<double>(n) > kMaxRemoteCount) fuzz::broken("a count out of range", std::to_string(n));
}

void check_kernels(const std::vector<KernelInfo> &ks) {
    for (size_t i = 0; i < ks.size(); ++i) {
        if (!kernel_name_problem(ks[i].name).empty()) fuzz::broken("a kernel name against the rule", ks[i].name);
        for (const std::string *text : {&ks[i].version, &ks[i].description})
            if (!kernel_text_problem(*text, "text").empty()) fuzz::broken("a kernel text with control characters", *text);
        for (size_t j = 0; j < i; ++j)
            if (ks[i].name == ks[j].name) fuzz::broken("a kernel listed twice", ks[i].name);
    }
}

void decode_json(unsigned endpoint, const json::object &body) {
    constexpr int64_t kCalls = 4;
    switch (endpoint) {
    case 0:
        if (auto h = decode_hello(body); h && !kernel_name_problem(h->adapter).empty()) fuzz::broken("an adapter name against the rule", h->adapter);
        break;
    case 1:
        if (auto k = decode_kernels(body, "fuzz")) check_kernels(*k);
        (void)decode_load_errors(body);
        break;
    case 2: (void)decode_supports(body); break;
    case 3:
        if (auto r = decode_run(body)) check_time(r->compile_s, false), check_time(r->run_s, false);
        break;
    case 4:
        if (auto m = decode_memory(body, kCalls)) {
            for (const auto *series : {&m->rss_bytes, &m->live_arrays, &m->live_array_bytes, &m->device_bytes_in_use}) {
                if (!series->empty() && series->size() != kCalls) fuzz::broken("a series of the wrong length", std::to_string(series->size()));
                for (int64_t n : *series) check_count(n, false);
            }
            check_count(m->device_peak_bytes, true);
        }
        break;
    case 5:
        if (auto t = decode_time(body)) {
            if (t->samples_s.empty()) fuzz::broken("accepted without samples", "");
            for (double s : t->samples_s) check_time(s, true);
            check_time(t->compile_s, false);
        }
        break;
    case 6:
        if (auto p = decode_profile(body); p && (p->empty() || p->find('/') != std::string::npos || *p == "..")) fuzz::broken("an archive path", *p);
        break;
    default: (void)decode_declined(body);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const unsigned endpoint = data[0] & 15;
    const long status = (data[0] >> 4) == 15 ? 500 : (data[0] >> 4) == 14 ? 404 : 200;
    const std::string_view body(reinterpret_cast<const char *>(data) + 1, size - 1);
    if (endpoint == 15) {  // GET /v1/tensors/<output>: a .npy of the case's output shape
        const std::vector<int64_t> shape = {1, 4, 2, 8};
        auto out = decode_output(body, "GET /v1/tensors/c1.out1", shape);
        if (out && out->size() != 64) fuzz::broken("an output of the wrong size", std::to_string(out->size()));
        if (!out && out.error().empty()) fuzz::broken("an error without a message", "");
        return 0;
    }
    const std::string what = "POST http://127.0.0.1:1/v1/fuzz";
    auto answer = decode_answer(status, body, what);
    if (!answer) {
        if (!answer.error().starts_with(what)) fuzz::broken("an answer error not naming the request", answer.error());
        return 0;
    }
    if (status != 200) fuzz::broken("a non-2xx answer accepted", std::to_string(status));
    decode_json(endpoint, *answer);
    return 0;
}
