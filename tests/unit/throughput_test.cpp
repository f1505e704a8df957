// Kept-score counts and FLOPs against hand-computed values and a brute-force count.
#include <vector>

#include <catch2/catch.hpp>

#include "io/rng.hpp"
#include "checks/throughput.hpp"

using namespace attngate;

namespace {
AttentionShape shape(int64_t sq, int64_t sk, bool causal = false, int64_t left = -1, int64_t right = -1) {
    AttentionShape s;
    s.seq_q = sq, s.seq_k = sk, s.heads_q = 1, s.head_dim = 8, s.head_dim_v = 8;
    s.causal = causal, s.window_left = left, s.window_right = right;
    return s;
}

/// O(Sq Sk) reference: the mask rule of docs/kernels.md, key by key.
int64_t brute_force(const AttentionShape &s, const std::vector<int32_t> &sq_ids, const std::vector<int32_t> &sk_ids) {
    int64_t kept = 0;
    for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t i = 0; i < s.seq_q; ++i)
            for (int64_t j = 0; j < s.seq_k; ++j) {
                const int64_t p = i + s.seq_k - s.seq_q;
                bool keep = !(s.causal && j > p);
                keep = keep && !(s.window_left >= 0 && j < p - s.window_left);
                keep = keep && !(s.window_right >= 0 && j > p + s.window_right);
                if (!sq_ids.empty()) keep = keep && sq_ids[size_t(b * s.seq_q + i)] == sk_ids[size_t(b * s.seq_k + j)];
                kept += keep;
            }
    return kept * s.heads_q;
}
}  // namespace

TEST_CASE("kept scores of masks counted by hand", "[throughput]") {
    CHECK(kept_scores(shape(4, 4)) == 16);
    CHECK(kept_scores(shape(4, 4, true)) == 10);        // rows keep 1, 2, 3, 4
    CHECK(kept_scores(shape(2, 5, true)) == 9);         // rows at p = 3, 4 keep 4, 5
    CHECK(kept_scores(shape(5, 2, true)) == 3);         // p = -3..1 keep 0, 0, 0, 1, 2
    CHECK(kept_scores(shape(4, 4, true, 1, 0)) == 7);   // 1, 2, 2, 2
    CHECK(kept_scores(shape(4, 4, false, 1, 1)) == 10); // 2, 3, 3, 2
    CHECK(kept_scores(shape(4, 4, false, 1000, 1000)) == 16);
    CHECK(kept_scores(shape(1, 320, true)) == 320);     // decode: one row sees the whole cache
}

TEST_CASE("flops count only kept scores times two D plus Dv", "[throughput]") {
    AttentionShape s = shape(4, 4, true);
    s.batch = 2, s.heads_q = 3, s.head_dim = 8, s.head_dim_v = 4;
    // 10 kept per problem x 2 x 3 = 60; 2 (8 + 4) 60 = 1440.
    CHECK(kept_scores(s) == 60);
    CHECK(attention_flops(s) == 1440.0);
    // smoke mha_f32: B 2, S 256, H 4, D 64, no mask: 2 x 128 x (2 x 4 x 256 x 256).
    AttentionShape mha{2, 256, 256, 4, 64, 64, false, -1, -1};
    CHECK(attention_flops(mha) == 134217728.0);
    CHECK(tokens_per_second(mha, 0.01) == Approx(51200.0));
    CHECK(gflops_per_second(134217728.0, 0.01) == Approx(13.4217728));
    CHECK(std::isnan(tokens_per_second(mha, 0.0)));
}

TEST_CASE("segments keep only same segment keys counted by hand", "[throughput]") {
    const AttentionShape s = shape(4, 4, true);
    // Rows 0,1 in segment 0, rows 2,3 in segment 1: causal keeps 1, 2, 1, 2.
    CHECK(kept_scores(s, std::vector<int32_t>{0, 0, 1, 1}, std::vector<int32_t>{0, 0, 1, 1}) == 6);
    // Per-token segments keep only the diagonal.
    CHECK(kept_scores(shape(4, 4), std::vector<int32_t>{0, 1, 2, 3}, std::vector<int32_t>{0, 1, 2, 3}) == 4);
}

TEST_CASE("a case's flops count its segment ids, the one count of the perf phase and A/B", "[throughput]") {
    CaseSpec c;
    c.seq_q = c.seq_k = 4, c.heads_q = c.heads_kv = 1, c.head_dim = c.head_dim_v = 8, c.causal = true;
    const std::vector<int32_t> ids = {0, 0, 1, 1};
    CHECK(case_flops(c, {}, {}) == attention_flops(attention_shape(c)));  // 10 kept
    CHECK(case_flops(c, ids, ids) == 2.0 * 16 * 6);                          // 6 kept: segments mask 4 more
}

TEST_CASE("kept scores agree with a brute force count over many masks", "[throughput]") {
    const CounterRng rng(5, "shapes");
    uint64_t n = 0;
    for (int trial = 0; trial < 300; ++trial) {
        AttentionShape s;
        s.batch = 1 + int64_t(rng.bits(n++) % 2), s.heads_q = 1 + int64_t(rng.bits(n++) % 3);
        s.seq_q = 1 + int64_t(rng.bits(n++) % 20), s.seq_k = 1 + int64_t(rng.bits(n++) % 20);
        s.head_dim = s.head_dim_v = 4;
        s.causal = rng.bits(n++) % 2;
        s.window_left = int64_t(rng.bits(n++) % 8) - 2;  // -2 and -1 both mean unbounded
        s.window_right = int64_t(rng.bits(n++) % 8) - 2;
        const int64_t segs = 1 + int64_t(rng.bits(n++) % 4);
        std::vector<int32_t> q, k;
        for (int64_t i = 0; i < s.batch * s.seq_q; ++i) q.push_back(int32_t(rng.bits(n++) % uint64_t(segs)));
        for (int64_t j = 0; j < s.batch * s.seq_k; ++j) k.push_back(int32_t(rng.bits(n++) % uint64_t(segs)));
        REQUIRE(kept_scores(s) == brute_force(s, {}, {}));
        REQUIRE(kept_scores(s, q, k) == brute_force(s, q, k));
    }
}
