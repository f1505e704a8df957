// The built-in kernels on paged, ragged batches: the reference against an independent loop
// over the pages, every kernel against the reference with the gate's tolerance on both
// instruction-set paths and thread counts, flash-decode's split-KV merge, its bits across
// thread counts and its constant workspace, and the decode products of each path.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include <catch2/catch.hpp>

#include "attngate/bf16.hpp"
#include "attngate/kernel_tools.hpp"
#include "backend/kernel_registry.hpp"
#include "decode_ops.hpp"
#include "kernel_oracle.hpp"
#include "test_support.hpp"

using namespace attngate;
using test::Instance;
using test::PathScope;
using test::kernel;

namespace {

struct Ran {
    std::vector<float> out;
    int64_t peak_bytes = 0;
};

Ran run(const attngate_kernel *k, const CaseSpec &c, const CaseInputs &in, int threads = 0, int64_t bq = 0, int64_t bk = 0) {
    std::optional<Instance> inst;  // 0 threads: none, the caller's thread
    if (threads > 0) inst.emplace(k, threads);
    Ran r{std::vector<float>(static_cast<size_t>(output_elements(c)), -777.0f)};
    CountingAllocator alloc;
    attngate_problem p = make_problem(c, in, r.out.data(), alloc.abi(), bq, bk);
    p.instance = inst ? inst->get() : nullptr;
    char err[256] = {0};
    INFO(k->name << " on " << c.id);
    REQUIRE(k->run(k, &p, err, sizeof err) == 0);
    CHECK(alloc.live_bytes() == 0);
    r.peak_bytes = alloc.peak_bytes();
    return r;
}

CaseSpec paged(std::string id, std::vector<int64_t> q_lens, std::vector<int64_t> kv_lens, int64_t hq, int64_t hkv, int64_t d,
               int64_t page_size = 16) {
    CaseSpec c = test::small_case(std::move(id), 1, 1, hq, hkv, d);
    PagedSpec p;
    p.q_lens = std::move(q_lens);
    p.kv_lens = std::move(kv_lens);
    p.page_size = page_size;
    p.pages = p.pages_needed() + p.pages_needed() / 3 + 1;
    c.batch = static_cast<int64_t>(p.kv_lens.size());
    c.seq_q = p.total_q();
    c.seq_k = p.max_kv();
    c.paged = p;
    return c;
}

CaseSpec bf16(CaseSpec c) {
    c.dtype = ATTNGATE_DTYPE_BF16;
    c.id += "_bf16";
    return c;
}

std::vector<CaseSpec> paged_cases() {
    std::vector<CaseSpec> cs;
    cs.push_back(paged("decode_ragged_kv", {1, 1, 1, 1}, {40, 70, 128, 1}, 8, 2, 32));
    auto mixed = paged("mixed_causal", {1, 7, 1, 20}, {50, 33, 16, 140}, 4, 2, 16);
    mixed.causal = true;
    cs.push_back(mixed);
    auto window = paged("gqa_window_softcap", {3, 1, 9}, {90, 200, 64}, 8, 2, 16, 8);
    window.causal = true;
    window.window_left = 24;
    window.softcap = 5.0;
    window.qk_amplitude = 4.0;
    cs.push_back(window);
    auto bidir = paged("window_both_sides", {4, 6}, {70, 45}, 2, 1, 16, 32);
    bidir.window_left = 10;
    bidir.window_right = 3;
    cs.push_back(bidir);
    auto mqa = paged("mqa_dv_differs", {1, 2}, {300, 47}, 4, 1, 24, 16);
    mqa.head_dim_v = 40;
    cs.push_back(mqa);
    cs.push_back(paged("page_size_one", {2, 1}, {5, 9}, 2, 2, 8, 1));
    auto nan = paged("nan_in_readable_v", {1, 4}, {40, 50}, 4, 2, 16);
    nan.causal = true;
    nan.nan = NanInjection{"v", {1, 47, 1, 3}};  // seen by three of the chunk's four queries
    cs.push_back(nan);
    auto nan_k = paged("nan_in_readable_k", {1, 1}, {40, 50}, 4, 2, 16);
    nan_k.nan = NanInjection{"k", {0, 39, 0, 5}};
    cs.push_back(nan_k);
    auto big = paged("large_logits", {1, 3}, {64, 90}, 4, 4, 32);
    big.qk_amplitude = 60.0;
    cs.push_back(big);
    return cs;
}

/// Paged attention straight from the pools, in double: an oracle that shares no code with
/// the kernels' gather.
std::vector<double> direct(const CaseSpec &c, const CaseInputs &in) {
    std::vector<double> out(static_cast<size_t>(output_elements(c)), 0.0);
    const int64_t g = c.heads_q / c.heads_kv, D = c.head_dim, Dv = c.head_dim_v;
    const auto slot = [&](int64_t b, int64_t j) { return in.page_table[static_cast<size_t>(b * in.pages_per_seq + j / in.page_size)] * in.page_size + j % in.page_size; };
    for (int64_t b = 0; b < c.batch; ++b) {
        const int64_t ql = c.paged->q_lens[static_cast<size_t>(b)], kl = c.paged->kv_lens[static_cast<size_t>(b)];
        for (int64_t i = 0; i < ql; ++i)
            for (int64_t h = 0; h < c.heads_q; ++h) {
                const int64_t t = in.cu_q_lens[static_cast<size_t>(b)] + i, pos = kl - ql + i, hk = h / g;
                std::vector<double> s;
                std::vector<int64_t> keys;
                for (int64_t j = 0; j < kl; ++j) {
                    if ((c.causal && j > pos) || (c.window_left >= 0 && j < pos - c.window_left) || (c.window_right >= 0 && j > pos + c.window_right)) continue;
                    double dot = 0;
                    for (int64_t e = 0; e < D; ++e) dot += double(in.q[static_cast<size_t>((t * c.heads_q + h) * D + e)]) * in.k[static_cast<size_t>((slot(b, j) * c.heads_kv + hk) * D + e)];
                    double x = dot * c.effective_scale();
                    if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
                    s.push_back(x);
                    keys.push_back(j);
                }
                double m = -INFINITY;
                for (double x : s) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
                double l = 0;
                for (double &x : s) l += (x = std::exp(x - m));
                for (int64_t e = 0; e < Dv; ++e) {
                    double acc = 0;
                    for (size_t n = 0; n < keys.size(); ++n) acc += s[n] * in.v[static_cast<size_t>((slot(b, keys[n]) * c.heads_kv + hk) * Dv + e)];
                    out[static_cast<size_t>((t * c.heads_q + h) * Dv + e)] = acc / l;
                }
            }
    }
    return out;
}

void require_pass(const char *name, const CaseSpec &c, const std::vector<float> &out, const std::vector<double> &ref,
                  const GoldenEntry &g, const std::string &how) {
    const CheckResult r = golden_check(out, ref, g);
    INFO(c.id << " on " << name << " " << how << ": " << r.reason);
    REQUIRE(r.verdict == Verdict::Pass);
}

}  // namespace

TEST_CASE("the paged reference is what the ABI documents, read straight from the pages", "[paged][kernels]") {
    const Suite suite = test::kernel_test_suite();
    for (const CaseSpec &c0 : paged_cases())
        for (const CaseSpec &c : {c0, bf16(c0)}) {
            const CaseInputs in = generate_inputs(suite, c);
            const auto ref = test::run_reference(c, in), want = direct(c, in);
            double scale = 1.0;
            for (double w : want)
                if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
            for (size_t i = 0; i < ref.size(); ++i) {
                INFO(c.id << " element " << i);
                REQUIRE(std::isnan(ref[i]) == std::isnan(want[i]));
                if (!std::isnan(want[i])) REQUIRE(std::fabs(ref[i] - want[i]) < 1e-12 * scale);
            }
        }
}

TEST_CASE("every built-in kernel matches the reference on paged batches, on every path and thread count", "[paged][kernels]") {
    const Suite suite = test::kernel_test_suite();
    struct K {
        const char *name;
        int64_t bq, bk;
    };
    const K kernels[] = {{"reference", 0, 0}, {"native", 0, 0}, {"flash", 0, 0}, {"flash", 16, 16}, {"flash", 7, 13}, {"flash-decode", 0, 0}};
    for (const char *path : {"portable", "avx512bf16"}) {
        const PathScope scope(path);
        for (const CaseSpec &c0 : paged_cases())
            for (const CaseSpec &c : {c0, bf16(c0)}) {
                const CaseInputs in = generate_inputs(suite, c);
                const auto ref = test::run_reference(c, in);
                const GoldenEntry g = test::calibrate(c, in, ref);
                for (const K &k : kernels)
                    for (int threads : {0, 3})
                        require_pass(k.name, c, run(kernel(k.name), c, in, threads, k.bq, k.bk).out, ref, g,
                                     std::string(path) + " threads " + std::to_string(threads) + " bq " + std::to_string(k.bq));
            }
    }
}

TEST_CASE("flash-decode runs dense cases too, bottom-right and top-left", "[paged][kernels]") {
    const Suite suite = test::kernel_test_suite();
    std::vector<CaseSpec> cases;
    auto decode = test::small_case("dense_decode_gqa", 1, 700, 8, 2, 64);
    decode.batch = 3;
    decode.causal = true;
    cases.push_back(decode);
    auto prefill = test::small_case("dense_prefill_causal", 90, 130, 4, 1, 32);
    prefill.causal = true;
    cases.push_back(prefill);
    auto top = test::small_case("dense_top_left_window", 70, 50, 2, 2, 16);
    top.causal = true;
    top.top_left = true;
    top.window_left = 9;
    cases.push_back(top);  // rows past seq_k have no key: zeros
    auto soft = test::small_case("dense_softcap_dv", 5, 300, 6, 3, 16);
    soft.softcap = 7.0;
    soft.qk_amplitude = 5.0;
    soft.head_dim_v = 8;
    cases.push_back(soft);
    for (const CaseSpec &c0 : cases)
        for (const CaseSpec &c : {c0, bf16(c0)}) {
            const CaseInputs in = generate_inputs(suite, c);
            const auto ref = test::run_reference(c, in);
            const GoldenEntry g = test::calibrate(c, in, ref);
            for (int threads : {0, 2}) require_pass("flash-decode", c, run(kernel("flash-decode"), c, in, threads).out, ref, g, "dense");
        }
}

TEST_CASE("flash-decode splits a short batch's keys and merges the partials, the same bits on any thread count", "[paged][kernels]") {
    const Suite suite = test::kernel_test_suite();
    // One sequence, 3000 keys: ten splits of 320 keys. Forty sequences: no split at all.
    for (const CaseSpec &c0 : {paged("one_long_sequence", {1}, {3000}, 8, 2, 32), paged("forty_sequences", std::vector<int64_t>(40, 1), std::vector<int64_t>(40, 600), 4, 4, 16)})
        for (const CaseSpec &c : {c0, bf16(c0)}) {
            const CaseInputs in = generate_inputs(suite, c);
            const auto ref = test::run_reference(c, in);
            const GoldenEntry g = test::calibrate(c, in, ref);
            const Ran one = run(kernel("flash-decode"), c, in, 1);
            require_pass("flash-decode", c, one.out, ref, g, "1 thread");
            for (int threads : {0, 2, 3, 5}) {
                const Ran again = run(kernel("flash-decode"), c, in, threads);
                INFO(c.id << " threads " << threads);
                CHECK(std::memcmp(one.out.data(), again.out.data(), one.out.size() * sizeof(float)) == 0);
            }
        }
}

TEST_CASE("flash-decode and flash keep their constant-workspace promise on paged batches", "[paged][kernels][memory]") {
    const Suite suite = test::kernel_test_suite();
    auto c = paged("promise", {1, 3, 1}, {200, 90, 700}, 8, 2, 32);
    auto doubled = paged("promise", {2, 6, 2}, {400, 180, 1400}, 8, 2, 32);
    for (const char *name : {"flash-decode", "flash"})
        for (int threads : {1, 2}) {
            const int64_t at = run(kernel(name), c, generate_inputs(suite, c), threads).peak_bytes;
            const int64_t twice = run(kernel(name), doubled, generate_inputs(suite, doubled), threads).peak_bytes;
            INFO(name << " threads " << threads << ": " << at << " B, then " << twice << " B");
            CHECK(at > 0);
            CHECK(twice == at);
        }
    // reference and native gather a sequence: linear (and quadratic) growth, as they promise.
    CHECK(run(kernel("reference"), doubled, generate_inputs(suite, doubled)).peak_bytes >
          run(kernel("reference"), c, generate_inputs(suite, c)).peak_bytes);
}

TEST_CASE("every built-in kernel's workspace is the same on every path: one memory baseline for every machine", "[paged][kernels][memory]") {
    // The memory gate keeps one peak per row, not one per machine class (docs/memory-gate.md).
    // A path forced above this CPU's falls back to its best, so each CPU compares the paths
    // it has: portable and avx2 everywhere this kind runs.
    const Suite suite = test::kernel_test_suite();
    auto d1 = test::small_case("d1", 1, 300, 4, 2, 1);
    auto dv = test::small_case("dv_differs", 5, 200, 6, 3, 33);
    dv.head_dim_v = 17;
    std::vector<CaseSpec> cases = {d1, bf16(dv), paged("pages", {1, 3, 1}, {200, 90, 700}, 8, 2, 40), bf16(paged("pages_d8", {1, 1}, {64, 33}, 2, 1, 8))};
    for (const char *name : {"reference", "native", "flash", "flash-decode"})
        for (const CaseSpec &c : cases) {
            const CaseInputs in = generate_inputs(suite, c);
            std::vector<std::pair<std::string, int64_t>> peaks;
            for (const char *path : {"portable", "avx2", "avx512", "avx512bf16"}) {
                const PathScope scope(path);
                peaks.emplace_back(kernels::isa_name(kernels::active_isa()), run(kernel(name), c, in, 2).peak_bytes);
            }
            for (const auto &[path, bytes] : peaks) {
                INFO(name << " on " << c.id << ": " << bytes << " B on " << path << ", " << peaks.front().second << " B on " << peaks.front().first);
                CHECK(bytes == peaks.front().second);
            }
        }
}

TEST_CASE("each path's decode products compute the plain dot products and sums", "[paged][kernels]") {
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const kernels::Isa isa : {kernels::Isa::Portable, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
        if (kernels::detected_isa() < isa) continue;
        const kernels::DecodeOps &ops = kernels::decode_ops(isa);
        for (const attngate_dtype dtype : {ATTNGATE_DTYPE_F32, ATTNGATE_DTYPE_BF16})
            for (const int64_t d : {1, 7, 16, 33, 64, 128}) {
                const int64_t m = 7, n = 21, dp = ops.padded(d);
                std::vector<float> kf(static_cast<size_t>(n * d)), qf(static_cast<size_t>(m * d)), p(static_cast<size_t>(m * n));
                for (auto &x : kf) x = round_to_bf16(u(gen));
                for (auto &x : qf) x = round_to_bf16(u(gen));
                for (auto &x : p) x = u(gen);
                std::vector<uint16_t> kb(kf.size()), qb(qf.size());
                for (size_t i = 0; i < kf.size(); ++i) kb[i] = float_to_bf16(kf[i]);
                for (size_t i = 0; i < qf.size(); ++i) qb[i] = float_to_bf16(qf[i]);
                const bool b16 = dtype == ATTNGATE_DTYPE_BF16;
                const size_t elem = b16 ? 2 : 4;
                const auto *kbase = b16 ? reinterpret_cast<const unsigned char *>(kb.data()) : reinterpret_cast<const unsigned char *>(kf.data());
                std::vector<const unsigned char *> rows(static_cast<size_t>(n));
                for (int64_t j = 0; j < n; ++j) rows[static_cast<size_t>(n - 1 - j)] = kbase + static_cast<size_t>(j * d) * elem;  // any order
                std::vector<float> qp(static_cast<size_t>(m * dp)), s(static_cast<size_t>(m * n)), acc(static_cast<size_t>(m * dp), 0.0f), out(static_cast<size_t>(d));
                for (int64_t r = 0; r < m; ++r)
                    ops.prepare(b16 ? static_cast<const void *>(qb.data() + r * d) : qf.data() + r * d, dtype, d, qp.data() + r * dp);
                kernels::PrefetchQueue pf{rows.data(), rows.data(), n, static_cast<size_t>(d) * elem, static_cast<size_t>(d) * elem};
                ops.qk(m, n, d, qp.data(), dp, rows.data(), 0, dtype, s.data(), n, &pf);  // asking for lines changes no result
                ops.pv(m, n, d, p.data(), n, rows.data(), 0, dtype, acc.data(), dp, nullptr);  // K rows stand in for V
                for (int64_t r = 0; r < m; ++r) {
                    ops.emit(acc.data() + r * dp, dtype, d, 2.0f, out.data());
                    for (int64_t j = 0; j < n; ++j) {
                        double dot = 0;
                        for (int64_t e = 0; e < d; ++e) dot += double(qf[static_cast<size_t>(r * d + e)]) * kf[static_cast<size_t>((n - 1 - j) * d + e)];
                        INFO(kernels::isa_name(isa) << " " << dtype_name(dtype) << " d " << d << " row " << r << " key " << j);
                        CHECK(s[static_cast<size_t>(r * n + j)] == Approx(dot).margin(1e-5));
                    }
                    for (int64_t e = 0; e < d; ++e) {
                        double sum = 0;
                        for (int64_t j = 0; j < n; ++j) sum += double(p[static_cast<size_t>(r * n + j)]) * kf[static_cast<size_t>((n - 1 - j) * d + e)];
                        CHECK(out[static_cast<size_t>(e)] == Approx(sum / 2).margin(1e-5));
                    }
                }
            }
    }
}

TEST_CASE("by the end of a key block the decode products have asked for the whole next one", "[paged][kernels]") {
    // The products ask for one line of the next block per line they read (PrefetchQueue::read),
    // so a block's QK and PV ask for every line of a next block of the same shape, whatever the
    // path, dtype, head dim or GQA group; a fixed number of lines per step asked for half of it.
    for (const kernels::Isa isa : {kernels::Isa::Portable, kernels::Isa::Avx2, kernels::Isa::Avx512}) {
        if (kernels::detected_isa() < isa) continue;
        const kernels::DecodeOps &ops = kernels::decode_ops(isa);
        for (const attngate_dtype dtype : {ATTNGATE_DTYPE_F32, ATTNGATE_DTYPE_BF16})
            for (const int64_t d : {64, 128})
                for (const int64_t m : {1, 4, 8}) {
                    const int64_t n = 64, dp = ops.padded(d);
                    const size_t row = static_cast<size_t>(d) * (dtype == ATTNGATE_DTYPE_BF16 ? 2 : 4);
                    std::vector<unsigned char> block(static_cast<size_t>(n) * row, 0), next(block.size(), 0);
                    std::vector<const unsigned char *> rows(static_cast<size_t>(n)), next_rows(rows.size());
                    for (int64_t j = 0; j < n; ++j) rows[static_cast<size_t>(j)] = block.data() + static_cast<size_t>(j) * row;
                    for (int64_t j = 0; j < n; ++j) next_rows[static_cast<size_t>(j)] = next.data() + static_cast<size_t>(j) * row;
                    std::vector<float> q(static_cast<size_t>(m * dp), 0.0f), s(static_cast<size_t>(m * n)), acc(q.size(), 0.0f);
                    kernels::PrefetchQueue pf{next_rows.data(), next_rows.data(), n, row, row};
                    ops.qk(m, n, d, q.data(), dp, rows.data(), 0, dtype, s.data(), n, &pf);
                    ops.pv(m, n, d, s.data(), n, rows.data(), 0, dtype, acc.data(), dp, &pf);
                    INFO(kernels::isa_name(isa) << " " << dtype_name(dtype) << " d " << d << " rows " << m);
                    CHECK(pf.at == 2 * n);
                }
    }
}
