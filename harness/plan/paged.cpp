// Paged cases: suite fields, page layout and the pools with their NaN slots.
#include "plan/paged.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "attngate/bf16.hpp"
#include "io/rng.hpp"

namespace attngate {

int64_t PagedSpec::pages_needed() const {
    int64_t n = 0;
    for (size_t b = 0; b < kv_lens.size(); ++b) n += pages_of(b);
    return n;
}

int64_t PagedSpec::pages_per_seq() const {
    int64_t n = 0;
    for (size_t b = 0; b < kv_lens.size(); ++b) n = std::max(n, pages_of(b));
    return n;
}

int64_t PagedSpec::total_q() const { return std::accumulate(q_lens.begin(), q_lens.end(), int64_t{0}); }
int64_t PagedSpec::max_kv() const { return kv_lens.empty() ? 0 : *std::max_element(kv_lens.begin(), kv_lens.end()); }
bool PagedSpec::ragged() const { return std::any_of(q_lens.begin(), q_lens.end(), [](int64_t q) { return q != 1; }); }

bool PagedSpec::has_padding() const {
    const int64_t width = pages_per_seq();  // once: per sequence it made 65,536 sequences take 13 s
    for (size_t b = 0; b < kv_lens.size(); ++b)
        if (pages_of(b) < width) return true;
    return false;
}

namespace {

constexpr int64_t kMaxSequences = 1 << 16;
constexpr int64_t kMaxKvLen = int64_t{1} << 24;
constexpr int64_t kMaxPages = std::numeric_limits<int32_t>::max();

void read_lengths(ObjectReader &pr, PagedSpec &p) {
    p.kv_lens = pr.integer_array("kv_lens", {});
    if (pr.ok() && (p.kv_lens.empty() || static_cast<int64_t>(p.kv_lens.size()) > kMaxSequences))
        pr.fail_at("kv_lens", fmt::format("expected an array of 1 to {} key counts, one per sequence", kMaxSequences));
    for (size_t b = 0; pr.ok() && b < p.kv_lens.size(); ++b)
        if (p.kv_lens[b] < 1 || p.kv_lens[b] > kMaxKvLen)
            pr.fail_at(fmt::format("kv_lens[{}]", b), fmt::format("expected an integer in [1, {}]", kMaxKvLen));
    p.q_lens = pr.integer_array("q_lens", std::vector<int64_t>(p.kv_lens.size(), 1));
    if (pr.ok() && p.q_lens.size() != p.kv_lens.size())
        pr.fail_at("q_lens", fmt::format("expected one q_len per sequence ({} kv_lens), got {}", p.kv_lens.size(), p.q_lens.size()));
    for (size_t b = 0; pr.ok() && b < p.q_lens.size(); ++b)
        if (p.q_lens[b] < 1 || p.q_lens[b] > p.kv_lens[b])
            pr.fail_at(fmt::format("q_lens[{}]", b),
                       fmt::format("expected an integer in [1, kv_lens[{}] = {}]: a sequence's queries are its last q_len keys",
                                   b, p.kv_lens[b]));
}

}  // namespace

void read_paged_shape(ObjectReader &r, CaseSpec &c) {
    for (const char *field : {"batch", "seq_q", "seq_k"})
        if (r.ok() && r.raw(field))
            r.fail_at(field, "a paged case takes its shape from \"paged\": batch is the number of kv_lens, seq_q the "
                             "sum of q_lens, seq_k the longest kv_len");
    const json::value *v = r.raw("paged");
    if (!v || !r.ok()) return;
    ObjectReader pr(*v, r.file(), r.path_of("paged"));
    PagedSpec p;
    read_lengths(pr, p);
    p.page_size = pr.integer("page_size", 16, 1, 1 << 16);
    const std::string layout = pr.string("layout", "scattered");
    if (pr.ok() && layout != "scattered" && layout != "contiguous")
        pr.fail_at("layout", fmt::format("expected \"scattered\" or \"contiguous\", got \"{}\"", layout));
    p.scattered = layout == "scattered";
    const int64_t needed = pr.ok() ? p.pages_needed() : 0;
    p.pages = pr.integer("pages", needed + std::max<int64_t>(1, needed / 4), 1, kMaxPages);
    if (pr.ok() && p.pages < needed)
        pr.fail_at("pages", fmt::format("expected at least {} pages: the sequences hold that many", needed));
    if (pr.ok() && p.pages == needed && p.has_padding())
        pr.fail_at("pages", fmt::format("expected more than {} pages: the page table's padding entries point at pages no "
                                        "sequence holds (NaN, so that a kernel reading past its table shows it), and there "
                                        "would be none", needed));
    r.adopt(pr.finish());
    if (!r.ok()) return;
    c.batch = static_cast<int64_t>(p.kv_lens.size());
    c.seq_q = p.total_q();
    c.seq_k = p.max_kv();
    c.paged = std::move(p);
}

void reject_dense_fields(ObjectReader &r) {
    if (r.ok() && r.raw("segments"))
        r.fail_at("segments", "a paged case has no segment ids: each sequence of the batch is its own segment");
    if (r.ok() && r.raw("bias"))
        r.fail_at("bias", "a paged case has no bias: a [B, H, Sq, Sk] shape means nothing for sequences of their own lengths");
}

void check_paged_case(ObjectReader &r, const CaseSpec &c) {
    if (!r.ok() || !c.paged) return;
    if (c.top_left)
        return r.fail_at("causal_alignment", "a paged case is bottom-right aligned: query i of sequence b sits at key "
                                             "position kv_len_b - q_len_b + i");
    if (!c.nan) return;
    const auto &[b, pos, h, d] = c.nan->index;
    const PagedSpec &p = *c.paged;
    const bool q = c.nan->tensor == "q";
    const int64_t seq = b < c.batch ? (q ? p.q_lens[static_cast<size_t>(b)] : p.kv_lens[static_cast<size_t>(b)]) : 0;
    if (b >= c.batch) r.fail_at("nan.index[0]", fmt::format("expected a sequence in [0, {})", c.batch));
    else if (pos >= seq)
        r.fail_at("nan.index[1]", fmt::format("expected a {} of sequence {} in [0, {}): a NaN the kernels may read",
                                              q ? "query" : "key position", b, seq));
    (void)h, (void)d;  // read_nan checked them against the heads and dims
}

PageLayout make_page_layout(const PagedSpec &p, uint64_t seed) {
    const int64_t total = p.pages, needed = p.pages_needed(), width = p.pages_per_seq();
    std::vector<int32_t> order(static_cast<size_t>(total));
    std::iota(order.begin(), order.end(), 0);
    // owner[t]: the sequence that takes order[t] (-1: unused); a sequence takes consecutive t.
    std::vector<int64_t> owner(static_cast<size_t>(total), -1);
    for (size_t b = 0, t = 0; b < p.kv_lens.size(); ++b)
        for (int64_t k = 0; k < p.pages_of(b); ++k) owner[t++] = static_cast<int64_t>(b);
    if (p.scattered) {
        const CounterRng rng(seed, "pages");
        for (int64_t i = total - 1; i > 0; --i)  // Fisher-Yates, 64-bit draws: the bias is below 2^-32
            std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.bits(static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1))]);
        // A forward sweep: a page next to its predecessor in the pool swaps with the first later
        // one that is not; positions before t never change again, so every pair ends up apart
        // unless fewer than three candidates are left.
        const auto near = [](int32_t a, int32_t b) { return a == b + 1 || b == a + 1; };
        for (int64_t t = 1; t < needed; ++t) {
            const auto ut = static_cast<size_t>(t);
            if (owner[ut] != owner[ut - 1] || !near(order[ut], order[ut - 1])) continue;
            for (size_t u = ut + 1; u < order.size(); ++u)
                if (!near(order[u], order[ut - 1])) {
                    std::swap(order[ut], order[u]);
                    break;
                }
        }
    }
    PageLayout l;
    l.unused.assign(order.begin() + needed, order.end());
    std::sort(l.unused.begin(), l.unused.end());
    l.table.assign(static_cast<size_t>(p.kv_lens.size() * width), 0);
    for (size_t b = 0, t = 0; b < p.kv_lens.size(); ++b)
        for (int64_t k = 0; k < width; ++k) {
            const size_t at = b * static_cast<size_t>(width) + static_cast<size_t>(k);
            if (k < p.pages_of(b)) l.table[at] = order[t++];
            else l.table[at] = l.unused[at % l.unused.size()];  // suite validation keeps unused non-empty here
        }
    return l;
}

namespace {

std::vector<float> draw_values(const CounterRng &rng, int64_t n, double amplitude, attngate_dtype dtype) {
    std::vector<float> out(static_cast<size_t>(n));
    const float a = static_cast<float>(amplitude);
    for (int64_t i = 0; i < n; ++i) {
        const float x = rng.uniform(static_cast<uint64_t>(i)) * a;
        out[static_cast<size_t>(i)] = dtype == ATTNGATE_DTYPE_BF16 ? round_to_bf16(x) : x;
    }
    return out;
}

/// Element offset of (page, slot, head) in a pool of row length dim.
int64_t pool_at(const CaseInputs &in, int64_t heads, int64_t dim, int64_t page, int64_t slot, int64_t h) {
    return ((page * in.page_size + slot) * heads + h) * dim;
}

}  // namespace

std::pair<std::vector<int64_t>, std::vector<int64_t>> unreadable_elements(const CaseSpec &c, const CaseInputs &in,
                                                                            Unreadable kind) {
    const PagedSpec &p = *c.paged;
    std::vector<char> held(static_cast<size_t>(in.num_pages), 0);
    // (page, first slot) runs to the page's end: every slot from there on is unreadable.
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (size_t b = 0; b < p.kv_lens.size(); ++b) {
        const int64_t pages = p.pages_of(b), row = static_cast<int64_t>(b) * in.pages_per_seq;
        for (int64_t k = 0; k < pages; ++k) held[static_cast<size_t>(in.page_table[static_cast<size_t>(row + k)])] = 1;
        const int64_t tail = p.kv_lens[b] % p.page_size;
        if (kind == Unreadable::PastKvLen && tail != 0) runs.emplace_back(in.page_table[static_cast<size_t>(row + pages - 1)], tail);
    }
    if (kind == Unreadable::OutsideTable)
        for (int64_t page = 0; page < in.num_pages; ++page)
            if (!held[static_cast<size_t>(page)]) runs.emplace_back(page, 0);
    std::sort(runs.begin(), runs.end());
    std::pair<std::vector<int64_t>, std::vector<int64_t>> out;
    for (const auto &[page, first] : runs)
        for (int64_t slot = first; slot < in.page_size; ++slot)
            for (int64_t h = 0; h < c.heads_kv; ++h) {
                for (int64_t d = 0; d < c.head_dim; ++d) out.first.push_back(pool_at(in, c.heads_kv, c.head_dim, page, slot, h) + d);
                for (int64_t d = 0; d < c.head_dim_v; ++d) out.second.push_back(pool_at(in, c.heads_kv, c.head_dim_v, page, slot, h) + d);
            }
    return out;
}

void generate_paged_inputs(const CaseSpec &c, uint64_t seed, CaseInputs &in) {
    const PagedSpec &p = *c.paged;
    in.num_pages = p.pages;
    in.page_size = p.page_size;
    in.pages_per_seq = p.pages_per_seq();
    in.page_table = make_page_layout(p, seed).table;
    in.cu_q_lens.assign(1, 0);
    for (size_t b = 0; b < p.kv_lens.size(); ++b) {
        in.kv_lens.push_back(static_cast<int32_t>(p.kv_lens[b]));
        in.cu_q_lens.push_back(static_cast<int32_t>(in.cu_q_lens.back() + p.q_lens[b]));
    }
    const int64_t slots = p.pages * p.page_size;
    in.q = draw_values(CounterRng(seed, "q"), p.total_q() * c.heads_q * c.head_dim, c.qk_amplitude, c.dtype);
    in.k = draw_values(CounterRng(seed, "k"), slots * c.heads_kv * c.head_dim, c.qk_amplitude, c.dtype);
    in.v = draw_values(CounterRng(seed, "v"), slots * c.heads_kv * c.head_dim_v, c.v_amplitude, c.dtype);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (Unreadable kind : {Unreadable::PastKvLen, Unreadable::OutsideTable}) {
        const auto [k, v] = unreadable_elements(c, in, kind);
        for (int64_t e : k) in.k[static_cast<size_t>(e)] = nan;
        for (int64_t e : v) in.v[static_cast<size_t>(e)] = nan;
    }
    if (!c.nan) return;
    const auto &[b, pos, h, d] = c.nan->index;
    if (c.nan->tensor == "q") {
        in.q[static_cast<size_t>(((in.cu_q_lens[static_cast<size_t>(b)] + pos) * c.heads_q + h) * c.head_dim + d)] = nan;
        return;
    }
    const int64_t page = in.page_table[static_cast<size_t>(b * in.pages_per_seq + pos / p.page_size)];
    const bool k = c.nan->tensor == "k";
    const int64_t dim = k ? c.head_dim : c.head_dim_v;
    (k ? in.k : in.v)[static_cast<size_t>(pool_at(in, c.heads_kv, dim, page, pos % p.page_size, h) + d)] = nan;
}

json::object paged_description(const CaseSpec &c, const CaseInputs &in) {
    const PagedSpec &p = *c.paged;
    return json::object{
        {"sequences", c.batch},
        {"q_lens", json::array(p.q_lens.begin(), p.q_lens.end())},
        {"kv_lens", json::array(p.kv_lens.begin(), p.kv_lens.end())},
        {"page_size", p.page_size},
        {"pages", p.pages},
        {"pages_per_seq", in.pages_per_seq},
        {"layout", p.scattered ? "scattered" : "contiguous"},
        {"pools", "k_pages [pages, page_size, heads_kv, head_dim], v_pages [pages, page_size, heads_kv, head_dim_v]"},
        {"queries", "q [seq_q, heads_q, head_dim]: sequence b's queries are rows cu_q_lens[b] .. cu_q_lens[b+1]-1; "
                    "the output is [1, seq_q, heads_q, head_dim_v] in the same order"},
        {"keys", "key j of sequence b is slot j % page_size of page page_table[b, j // page_size]"},
        {"alignment", "bottom-right per sequence: query i of sequence b sits at key position kv_lens[b] - q_lens[b] + i"},
        {"unreadable", "NaN: every slot past kv_len in a sequence's last page, and every page no sequence's table holds "
                       "(the table's padding entries point at those)"},
    };
}

json::object paged_params(const PagedSpec &p) {
    return json::object{{"q_lens", json::array(p.q_lens.begin(), p.q_lens.end())},
                        {"kv_lens", json::array(p.kv_lens.begin(), p.kv_lens.end())},
                        {"page_size", p.page_size},
                        {"pages", p.pages},
                        {"pages_per_seq", p.pages_per_seq()},
                        {"layout", p.scattered ? "scattered" : "contiguous"}};
}

}  // namespace attngate
