// Input generation and export.
#include "plan/inputs.hpp"

#include <cmath>
#include <limits>

#include "attngate/bf16.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"
#include "io/rng.hpp"
#include "plan/paged.hpp"

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

// A paged case's output is [1, seq_q, Hq, Dv] over the batch's query tokens.
int64_t output_elements(const CaseSpec &c) { return (c.paged ? 1 : c.batch) * c.seq_q * c.heads_q * c.head_dim_v; }
std::vector<int64_t> output_shape(const CaseSpec &c) { return {c.paged ? 1 : c.batch, c.seq_q, c.heads_q, c.head_dim_v}; }

CaseInputs generate_inputs(const Suite &suite, const CaseSpec &c) {
    const uint64_t seed = splitmix64_at(suite.seed, fnv1a64(c.id));
    CaseInputs in;
    in.dtype = c.dtype;
    if (c.paged) {
        generate_paged_inputs(c, seed, in);
        if (c.dtype == ATTNGATE_DTYPE_BF16) in.q_bf16 = to_bf16_bits(in.q), in.k_bf16 = to_bf16_bits(in.k), in.v_bf16 = to_bf16_bits(in.v);
        return in;
    }
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
    add(page_table), add(kv_lens), add(cu_q_lens);  // all empty for a dense case: its hash is unchanged
    return sha256_hex(bytes);
}

const attngate_paged_kv *CaseInputs::paged_view() const {
    if (!paged()) return nullptr;
    const bool bf16 = dtype == ATTNGATE_DTYPE_BF16;
    view_.k_pages = bf16 ? static_cast<const void *>(k_bf16.data()) : k.data();
    view_.v_pages = bf16 ? static_cast<const void *>(v_bf16.data()) : v.data();
    view_.page_table = page_table.data();
    view_.kv_lens = kv_lens.data();
    view_.cu_q_lens = cu_q_lens.data();
    view_.num_pages = num_pages;
    view_.page_size = page_size;
    view_.pages_per_seq = pages_per_seq;
    return &view_;
}

CaseInputs with_finite(const CaseInputs &in, const CaseSpec &c, std::initializer_list<Unreadable> kinds) {
    CaseInputs out = in;
    if (!c.paged) return out;
    const auto zero = [bf16 = in.dtype == ATTNGATE_DTYPE_BF16](std::vector<float> &f, std::vector<uint16_t> &bits, int64_t e) {
        f[static_cast<size_t>(e)] = 0.0f;
        if (bf16) bits[static_cast<size_t>(e)] = 0;
    };
    for (Unreadable kind : kinds) {
        const auto [k, v] = unreadable_elements(c, in, kind);
        for (int64_t e : k) zero(out.k, out.k_bf16, e);
        for (int64_t e : v) zero(out.v, out.v_bf16, e);
    }
    return out;
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
    p.paged = in.paged_view();  // paged: the pools stand in for k and v
    p.k = p.paged ? nullptr : bf16 ? static_cast<const void *>(in.k_bf16.data()) : in.k.data();
    p.v = p.paged ? nullptr : bf16 ? static_cast<const void *>(in.v_bf16.data()) : in.v.data();
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

std::vector<std::pair<std::string, NpyArray>> input_tensors(const CaseSpec &c, const CaseInputs &in) {
    std::vector<std::pair<std::string, NpyArray>> t;
    if (c.paged) {
        const int64_t slots[2] = {in.num_pages, in.page_size};
        t.emplace_back("q", make_npy(in.q, {c.seq_q, c.heads_q, c.head_dim}));
        t.emplace_back("k_pages", make_npy(in.k, {slots[0], slots[1], c.heads_kv, c.head_dim}));
        t.emplace_back("v_pages", make_npy(in.v, {slots[0], slots[1], c.heads_kv, c.head_dim_v}));
        t.emplace_back("page_table", make_npy(in.page_table, {c.batch, in.pages_per_seq}));
        t.emplace_back("kv_lens", make_npy(in.kv_lens, {c.batch}));
        t.emplace_back("cu_q_lens", make_npy(in.cu_q_lens, {c.batch + 1}));
        return t;
    }
    t.emplace_back("q", make_npy(in.q, {c.batch, c.seq_q, c.heads_q, c.head_dim}));
    t.emplace_back("k", make_npy(in.k, {c.batch, c.seq_k, c.heads_kv, c.head_dim}));
    t.emplace_back("v", make_npy(in.v, {c.batch, c.seq_k, c.heads_kv, c.head_dim_v}));
    if (!in.bias.empty()) t.emplace_back("bias", make_npy(in.bias, c.bias_shape));
    if (!in.segment_ids_q.empty()) t.emplace_back("segment_ids_q", make_npy(in.segment_ids_q, {c.batch, c.seq_q}));
    if (!in.segment_ids_kv.empty()) t.emplace_back("segment_ids_kv", make_npy(in.segment_ids_kv, {c.batch, c.seq_k}));
    return t;
}

Result<void> write_case_inputs(const Suite &suite, const CaseSpec &c, const std::filesystem::path &dir) {
    const CaseInputs in = generate_inputs(suite, c);
    json::object files;
    std::vector<std::pair<std::string, NpyArray>> tensors = input_tensors(c, in);
    for (const auto &[name, array] : tensors) {
        files[name] = name + ".npy";
        if (auto r = write_file_atomic(dir / (name + ".npy"), serialize_npy(array)); !r) return r;
    }
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
    if (c.paged) {
        desc["layout"] = "paged: see \"paged\"";
        desc["paged"] = paged_description(c, in);
    }
    return write_file_atomic(dir / "case.json", pretty_json(desc));
}

}  // namespace attngate
