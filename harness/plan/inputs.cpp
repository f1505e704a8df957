// Input generation and export.
#include "plan/inputs.hpp"

#include <cmath>
#include <limits>

#include "attngate/bf16.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"
#include "io/rng.hpp"

namespace attngate {

namespace {

std::vector<float> draw(const CounterRng &rng, int64_t n, double amplitude, attngate_dtype dtype) {
    std::vector<float> out(static_cast<size_t>(n));
    const float a = static_cast<float>(amplitude);
    for (int64_t i = 0; i < n; ++i) {
        float x = rng.uniform(static_cast<uint64_t>(i)) * a;
        out[static_cast<size_t>(i)] = dtype == ATTNGATE_DTYPE_BF16 ? round_to_bf16(x) : x;
    }
    return out;
}

/// Packed-sequence segment ids: n contiguous segments with the same random cut points
/// (as fractions of the sequence) for queries and keys, so segment s of the queries
/// lines up with segment s of the keys.
std::vector<int32_t> packed_segments(const CounterRng &rng, int64_t batch, int64_t seq, int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(batch * seq));
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < seq; ++i) {
            // Token i sits at fraction (2i+1)/(2 seq); cut c at fraction u_c / 2^24.
            int32_t segment = 0;
            for (int64_t c = 0; c + 1 < n; ++c) {
                const uint64_t u = rng.bits(static_cast<uint64_t>(b * n + c)) >> 40;
                if (u * 2 * static_cast<uint64_t>(seq) <= static_cast<uint64_t>(2 * i + 1) << 24) ++segment;
            }
            ids[static_cast<size_t>(b * seq + i)] = segment;
        }
    }
    return ids;
}

std::vector<uint16_t> to_bf16_bits(const std::vector<float> &v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
    return out;
}

}  // namespace

int64_t output_elements(const CaseSpec &c) { return c.batch * c.seq_q * c.heads_q * c.head_dim_v; }
std::vector<int64_t> output_shape(const CaseSpec &c) { return {c.batch, c.seq_q, c.heads_q, c.head_dim_v}; }

CaseInputs generate_inputs(const Suite &suite, const CaseSpec &c) {
    const uint64_t seed = splitmix64_at(suite.seed, fnv1a64(c.id));
    CaseInputs in;
    in.dtype = c.dtype;
    in.q = draw(CounterRng(seed, "q"), c.batch * c.seq_q * c.heads_q * c.head_dim, c.qk_amplitude, c.dtype);
    in.k = draw(CounterRng(seed, "k"), c.batch * c.seq_k * c.heads_kv * c.head_dim, c.qk_amplitude, c.dtype);
    in.v = draw(CounterRng(seed, "v"), c.batch * c.seq_k * c.heads_kv * c.head_dim_v, c.v_amplitude, c.dtype);
    if (!c.bias_shape.empty()) {
        int64_t n = 1;
        for (int64_t d : c.bias_shape) n *= d;
        in.bias = draw(CounterRng(seed, "bias"), n, c.bias_amplitude, ATTNGATE_DTYPE_F32);
    }
    if (c.segments_per_token) {
        for (int64_t b = 0; b < c.batch; ++b)
            for (int64_t i = 0; i < c.seq_q; ++i) in.segment_ids_q.push_back(static_cast<int32_t>(i));
        in.segment_ids_kv = in.segment_ids_q;
    } else if (c.segments > 0) {
        const CounterRng rng(seed, "segments");
        in.segment_ids_q = packed_segments(rng, c.batch, c.seq_q, c.segments);
        in.segment_ids_kv = packed_segments(rng, c.batch, c.seq_k, c.segments);
    }
    if (c.nan) {
        const auto &[b, s, h, d] = c.nan->index;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        if (c.nan->tensor == "q") in.q[static_cast<size_t>(((b * c.seq_q + s) * c.heads_q + h) * c.head_dim + d)] = nan;
        if (c.nan->tensor == "k") in.k[static_cast<size_t>(((b * c.seq_k + s) * c.heads_kv + h) * c.head_dim + d)] = nan;
        if (c.nan->tensor == "v") in.v[static_cast<size_t>(((b * c.seq_k + s) * c.heads_kv + h) * c.head_dim_v + d)] = nan;
    }
    if (c.dtype == ATTNGATE_DTYPE_BF16) {
        in.q_bf16 = to_bf16_bits(in.q);
        in.k_bf16 = to_bf16_bits(in.k);
        in.v_bf16 = to_bf16_bits(in.v);
    }
    return in;
}

std::string CaseInputs::sha256() const {
    std::string bytes;
    const auto add = [&](const auto &v) {
        bytes.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(v[0]));
    };
    add(q), add(k), add(v), add(bias), add(segment_ids_q), add(segment_ids_kv);
    return sha256_hex(bytes);
}

attngate_problem make_problem(const CaseSpec &c, const CaseInputs &in, float *out,
                              const attngate_allocator *allocator, int64_t block_q, int64_t block_k) {
    attngate_problem p{};
    p.batch = c.batch;
    p.seq_q = c.seq_q;
    p.seq_k = c.seq_k;
    p.heads_q = c.heads_q;
    p.heads_kv = c.heads_kv;
    p.head_dim = c.head_dim;
    p.head_dim_v = c.head_dim_v;
    p.dtype = c.dtype;
    p.scale = c.effective_scale();
    p.softcap = static_cast<float>(c.softcap);
    p.causal = c.causal ? 1 : 0;
    p.causal_alignment = c.top_left ? ATTNGATE_ALIGN_TOP_LEFT : ATTNGATE_ALIGN_BOTTOM_RIGHT;
    p.window_left = c.window_left;
    p.window_right = c.window_right;
    const bool bf16 = c.dtype == ATTNGATE_DTYPE_BF16;
    p.q = bf16 ? static_cast<const void *>(in.q_bf16.data()) : in.q.data();
    p.k = bf16 ? static_cast<const void *>(in.k_bf16.data()) : in.k.data();
    p.v = bf16 ? static_cast<const void *>(in.v_bf16.data()) : in.v.data();
    if (!in.bias.empty()) {
        p.bias = in.bias.data();
        for (int d = 0; d < 4; ++d) p.bias_shape[d] = c.bias_shape[static_cast<size_t>(d)];
    } else {
        for (auto &d : p.bias_shape) d = 1;
    }
    if (!in.segment_ids_q.empty()) {
        p.segment_ids_q = in.segment_ids_q.data();
        p.segment_ids_kv = in.segment_ids_kv.data();
    }
    p.out = out;
    p.block_q = block_q;
    p.block_k = block_k;
    p.allocator = allocator;
    return p;
}

Result<void> write_case_inputs(const Suite &suite, const CaseSpec &c, const std::filesystem::path &dir) {
    const CaseInputs in = generate_inputs(suite, c);
    json::object files;
    const auto put = [&](const std::string &name, const NpyArray &a) -> Result<void> {
        files[name] = name + ".npy";
        return write_file_atomic(dir / (name + ".npy"), serialize_npy(a));
    };
    Result<void> r = put("q", make_npy(in.q, {c.batch, c.seq_q, c.heads_q, c.head_dim}));
    if (r) r = put("k", make_npy(in.k, {c.batch, c.seq_k, c.heads_kv, c.head_dim}));
    if (r) r = put("v", make_npy(in.v, {c.batch, c.seq_k, c.heads_kv, c.head_dim_v}));
    if (r && !in.bias.empty()) r = put("bias", make_npy(in.bias, c.bias_shape));
    if (r && !in.segment_ids_q.empty()) r = put("segment_ids_q", make_npy(in.segment_ids_q, {c.batch, c.seq_q}));
    if (r && !in.segment_ids_kv.empty()) r = put("segment_ids_kv", make_npy(in.segment_ids_kv, {c.batch, c.seq_k}));
    if (!r) return r;
    json::object desc{
        {"suite", suite.name},
        {"case", c.id},
        {"seed", suite.seed},
        {"generator_version", kGeneratorVersion},
        {"inputs_sha256", in.sha256()},
        {"layout", "[B, S, H, D] row-major"},
        {"dtype", dtype_name(c.dtype)},
        {"dtype_note", c.dtype == ATTNGATE_DTYPE_BF16
                           ? "q, k, v hold bf16-exact values stored as float32; kernels see bf16 operands"
                           : "float32 operands"},
        {"shape", json::object{{"batch", c.batch}, {"seq_q", c.seq_q}, {"seq_k", c.seq_k}, {"heads_q", c.heads_q},
                               {"heads_kv", c.heads_kv}, {"head_dim", c.head_dim}, {"head_dim_v", c.head_dim_v}}},
        {"scale", c.effective_scale()},
        {"softcap", c.softcap},
        {"causal", c.causal},
        {"window", json::array{c.window_left, c.window_right}},
        {"causal_alignment", c.top_left ? "top_left" : "bottom_right"},
        {"mask_alignment", c.top_left ? "top-left: query i sits at key position i; causal keeps j <= that position; "
                                        "window keeps [pos - left, pos + right], -1 unbounded; segment ids must match"
                                      : "bottom-right: query i sits at key position i + seq_k - seq_q; causal keeps j <= that "
                                        "position; window keeps [pos - left, pos + right], -1 unbounded; segment ids must match"},
        {"score", "softcap(scale * q.k) + bias, softcap(s) = cap * tanh(s / cap) when cap > 0"},
        {"empty_rows", "a query row with no allowed key outputs zeros"},
        {"files", files},
    };
    return write_file_atomic(dir / "case.json", pretty_json(desc));
}

}  // namespace attngate
