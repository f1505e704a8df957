// What a row says about its case and the class its numerics are kept per (run.hpp).
#include "backend/in_process_backend.hpp"
#include "plan/paged.hpp"
#include "results/fingerprint.hpp"
#include "run/run.hpp"

namespace attngate {

std::string numerics_class() { return fmt::format("{} {}", builtin_numerics_path(), compiler_name()); }

json::object case_params(const CaseSpec &c) {
    json::object o{{"batch", c.batch},     {"seq_q", c.seq_q},       {"seq_k", c.seq_k},
                   {"heads_q", c.heads_q}, {"heads_kv", c.heads_kv}, {"head_dim", c.head_dim},
                   {"head_dim_v", c.head_dim_v}, {"dtype", dtype_name(c.dtype)}, {"causal", c.causal},
                   {"window", json::array{c.window_left, c.window_right}}, {"softcap", c.softcap},
                   {"scale", c.effective_scale()}};
    if (c.segments_per_token) o["segments"] = "per_token";
    else if (c.segments) o["segments"] = c.segments;
    if (!c.bias_shape.empty()) o["bias"] = json::array(c.bias_shape.begin(), c.bias_shape.end());
    if (c.nan) o["nan_in"] = c.nan->tensor;
    if (c.top_left) o["causal_alignment"] = "top_left";
    if (c.paged) o["paged"] = paged_params(*c.paged);
    return o;
}

}  // namespace attngate
