// Paged cases in the plan: the suite's "paged" object and its bad inputs, the page layout,
// the pools with NaN in every unreadable slot, and the coverage features.
#include <algorithm>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "backend/remote_protocol.hpp"
#include "checks/paged_reads.hpp"
#include "checks/throughput.hpp"
#include "plan/coverage.hpp"
#include "plan/inputs.hpp"
#include "plan/kernel_info.hpp"
#include "plan/paged.hpp"
#include "plan/suite.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {

Result<Suite> parse_case(const std::string &fields) {
    return parse_suite(R"({"name": "t", "kernels": ["reference"], "cases": [{"id": "p", )" + fields + "}]}", "paged.json");
}

std::string error_of(const std::string &fields) {
    auto s = parse_case(fields);
    REQUIRE_FALSE(s);
    CHECK(s.error().kind == ErrorKind::BadInput);
    CHECK_THAT(s.error().message, Catch::StartsWith("paged.json: "));
    return s.error().message;
}

const std::string kHeads = R"("heads_q": 4, "heads_kv": 2, "head_dim": 8)";

CaseSpec paged_case(std::vector<int64_t> q_lens, std::vector<int64_t> kv_lens, int64_t page_size, int64_t pages, bool scattered) {
    CaseSpec c = test::small_case("paged", 1, 1, 4, 2, 8);
    PagedSpec p;
    p.q_lens = std::move(q_lens);
    p.kv_lens = std::move(kv_lens);
    p.page_size = page_size;
    p.pages = pages;
    p.scattered = scattered;
    c.batch = static_cast<int64_t>(p.kv_lens.size());
    c.seq_q = p.total_q();
    c.seq_k = p.max_kv();
    c.paged = p;
    return c;
}

bool is_nan_slot(const CaseInputs &in, const CaseSpec &c, int64_t page, int64_t slot) {
    const int64_t at = ((page * in.page_size + slot) * c.heads_kv) * c.head_dim;
    for (int64_t e = 0; e < c.heads_kv * c.head_dim; ++e)
        if (!std::isnan(in.k[static_cast<size_t>(at + e)])) return false;
    const int64_t atv = ((page * in.page_size + slot) * c.heads_kv) * c.head_dim_v;
    for (int64_t e = 0; e < c.heads_kv * c.head_dim_v; ++e)
        if (!std::isnan(in.v[static_cast<size_t>(atv + e)])) return false;
    return true;
}

}  // namespace

TEST_CASE("a paged case takes its shape from its sequences", "[paged][suite]") {
    auto s = parse_case(R"("paged": {"q_lens": [1, 3], "kv_lens": [40, 17], "page_size": 16}, )" + kHeads);
    REQUIRE(s);
    const CaseSpec &c = s->cases[0];
    REQUIRE(c.paged);
    CHECK(c.batch == 2);
    CHECK(c.seq_q == 4);   // the batch's query tokens
    CHECK(c.seq_k == 40);  // the longest kv_len
    CHECK(c.paged->pages_needed() == 3 + 2);
    CHECK(c.paged->pages == 5 + 1);  // a quarter more, at least one spare
    CHECK(c.paged->scattered);
    CHECK(c.paged->ragged());
    CHECK(output_shape(c) == std::vector<int64_t>{1, 4, 4, 8});
    auto d = parse_case(R"("paged": {"kv_lens": [5, 9], "layout": "contiguous", "pages": 2, "page_size": 16}, )" + kHeads);
    REQUIRE(d);
    CHECK(d->cases[0].paged->q_lens == std::vector<int64_t>{1, 1});  // decode steps by default
    CHECK_FALSE(d->cases[0].paged->ragged());
    CHECK_FALSE(d->cases[0].paged->scattered);
}

TEST_CASE("impossible paged combinations are bad input naming the JSON path", "[paged][suite]") {
    const std::string paged = R"("paged": {"kv_lens": [40, 17]}, )" + kHeads;
    CHECK_THAT(error_of(R"("seq_q": 4, )" + paged), Catch::Contains("$.cases[0].seq_q: a paged case takes its shape from \"paged\""));
    CHECK_THAT(error_of(R"("batch": 2, )" + paged), Catch::Contains("$.cases[0].batch:"));
    CHECK_THAT(error_of(R"("segments": 2, )" + paged), Catch::Contains("$.cases[0].segments: a paged case has no segment ids"));
    CHECK_THAT(error_of(R"("bias": true, )" + paged), Catch::Contains("$.cases[0].bias: a paged case has no bias"));
    CHECK_THAT(error_of(R"("causal": true, "causal_alignment": "top_left", )" + paged),
               Catch::Contains("$.cases[0].causal_alignment: a paged case is bottom-right aligned"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [4, 8], "q_lens": [1]}, )" + kHeads),
               Catch::Contains("$.cases[0].paged.q_lens: expected one q_len per sequence (2 kv_lens), got 1"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [4, 8], "q_lens": [1, 9]}, )" + kHeads),
               Catch::Contains("$.cases[0].paged.q_lens[1]: expected an integer in [1, kv_lens[1] = 8]"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [4, 0]}, )" + kHeads), Catch::Contains("$.cases[0].paged.kv_lens[1]: expected an integer in [1,"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": []}, )" + kHeads), Catch::Contains("$.cases[0].paged.kv_lens: expected an array of 1 to"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [40], "page_size": 16, "pages": 2}, )" + kHeads),
               Catch::Contains("$.cases[0].paged.pages: expected at least 3 pages"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [40, 8], "page_size": 16, "pages": 4}, )" + kHeads),
               Catch::Contains("$.cases[0].paged.pages: expected more than 4 pages: the page table's padding entries"));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [40], "layout": "random"}, )" + kHeads),
               Catch::Contains("$.cases[0].paged.layout: expected \"scattered\" or \"contiguous\""));
    CHECK_THAT(error_of(R"("paged": {"kv_lens": [40], "page": 16}, )" + kHeads), Catch::Contains("$.cases[0].paged.page: unknown field"));
    CHECK_THAT(error_of(R"("nan": {"tensor": "v", "index": [1, 17, 0, 0]}, )" + paged),
               Catch::Contains("$.cases[0].nan.index[1]: expected a key position of sequence 1 in [0, 17)"));
    CHECK_THAT(error_of(R"("nan": {"tensor": "q", "index": [0, 1, 0, 0]}, )" + paged),
               Catch::Contains("$.cases[0].nan.index[1]: expected a query of sequence 0 in [0, 1)"));
    // A dense case's unknown-field message names "paged" among the fields it could have meant.
    auto dense = parse_case(R"("seq_q": 8, "pagd": {}, )" + kHeads);
    REQUIRE_FALSE(dense);
    CHECK_THAT(dense.error().message, Catch::Contains("$.cases[0].pagd: unknown field") && Catch::Contains("paged"));
}

TEST_CASE("a contiguous layout holds the sequences one after another", "[paged][inputs]") {
    const CaseSpec c = paged_case({1, 1}, {40, 17}, 16, 7, false);
    const PageLayout l = make_page_layout(*c.paged, 1);
    CHECK(l.table == std::vector<int32_t>{0, 1, 2, 3, 4, 6});  // [2, 3]; sequence 1's third entry is padding
    CHECK(l.unused == std::vector<int32_t>{5, 6});
}

TEST_CASE("a scattered layout is a seeded permutation with no neighbouring pages in a sequence", "[paged][inputs]") {
    const CaseSpec c = paged_case({1, 1, 1, 1}, {300, 170, 64, 250}, 16, 80, true);
    const PagedSpec &p = *c.paged;
    const PageLayout a = make_page_layout(p, 7), again = make_page_layout(p, 7), other = make_page_layout(p, 8);
    CHECK(a.table == again.table);  // the counter RNG: the same seed, the same bits
    CHECK(a.table != other.table);
    std::set<int32_t> held;
    const int64_t width = p.pages_per_seq();
    for (size_t b = 0; b < p.kv_lens.size(); ++b)
        for (int64_t k = 0; k < width; ++k) {
            const int32_t page = a.table[b * static_cast<size_t>(width) + static_cast<size_t>(k)];
            REQUIRE(page >= 0);
            REQUIRE(page < p.pages);
            if (k >= p.pages_of(b)) {
                CHECK(std::binary_search(a.unused.begin(), a.unused.end(), page));  // padding points at unused pages
                continue;
            }
            CHECK(held.insert(page).second);  // no page held twice
            if (k > 0) CHECK(std::abs(page - a.table[b * static_cast<size_t>(width) + static_cast<size_t>(k) - 1]) != 1);
        }
    CHECK(static_cast<int64_t>(held.size()) == p.pages_needed());
    CHECK(static_cast<int64_t>(a.unused.size()) == p.pages - p.pages_needed());
    for (int32_t u : a.unused) CHECK_FALSE(held.contains(u));
}

TEST_CASE("every slot no query may read is NaN, every other one finite", "[paged][inputs]") {
    Suite suite;
    suite.seed = 5;
    const CaseSpec c = paged_case({1, 2}, {20, 32}, 16, 6, true);
    const CaseInputs in = generate_inputs(suite, c);
    REQUIRE(in.paged());
    CHECK(in.cu_q_lens == std::vector<int32_t>{0, 1, 3});
    CHECK(in.kv_lens == std::vector<int32_t>{20, 32});
    std::set<int64_t> held;
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < c.paged->pages_of(static_cast<size_t>(b)); ++k) held.insert(in.page_table[static_cast<size_t>(b * 2 + k)]);
    int64_t nan_slots = 0;
    for (int64_t page = 0; page < in.num_pages; ++page)
        for (int64_t slot = 0; slot < in.page_size; ++slot) {
            bool readable = false;
            for (int64_t b = 0; b < 2; ++b)
                for (int64_t j = 0; j < in.kv_lens[static_cast<size_t>(b)]; ++j)
                    readable = readable || (in.page_table[static_cast<size_t>(b * 2 + j / 16)] == page && j % 16 == slot);
            const bool nan = is_nan_slot(in, c, page, slot);
            CHECK(nan == !readable);
            nan_slots += nan;
        }
    CHECK(nan_slots == (6 - 4) * 16 + (16 - 4));  // two unused pages, 12 slots past kv_len 20
    // with_finite clears one kind only.
    const CaseInputs past = with_finite(in, c, {Unreadable::PastKvLen}), outside = with_finite(in, c, {Unreadable::OutsideTable});
    const CaseInputs none = with_finite(in, c, {Unreadable::PastKvLen, Unreadable::OutsideTable});
    for (float x : none.k) CHECK_FALSE(std::isnan(x));
    for (float x : none.v) CHECK_FALSE(std::isnan(x));
    const int64_t last = in.page_table[1];  // sequence 0's second (last) page
    CHECK_FALSE(is_nan_slot(past, c, last, 4));
    CHECK(is_nan_slot(outside, c, last, 4));
    for (int64_t page = 0; page < in.num_pages; ++page)
        if (!held.contains(page)) CHECK(is_nan_slot(past, c, page, 0) != is_nan_slot(outside, c, page, 0));
}

TEST_CASE("a paged NaN lands in the pool slot its sequence position maps to", "[paged][inputs]") {
    Suite suite;
    suite.seed = 5;
    CaseSpec c = paged_case({1, 1}, {20, 40}, 16, 6, true);
    c.nan = NanInjection{"v", {1, 33, 1, 3}};
    const CaseInputs in = generate_inputs(suite, c);
    const int64_t page = in.page_table[static_cast<size_t>(1 * in.pages_per_seq + 2)];
    CHECK(std::isnan(in.v[static_cast<size_t>(((page * 16 + 1) * 2 + 1) * 8 + 3)]));
    CaseSpec q = c;
    q.nan = NanInjection{"q", {1, 0, 2, 5}};
    CHECK(std::isnan(generate_inputs(suite, q).q[static_cast<size_t>((1 * 4 + 2) * 8 + 5)]));
    CHECK(generate_inputs(suite, q).sha256() != in.sha256());
}

TEST_CASE("paged coverage counts its features where they change the output", "[paged][coverage]") {
    Suite suite;
    CaseSpec decode = paged_case({1, 1}, {32, 48}, 16, 6, true);
    decode.causal = true;  // one query per sequence: causal masks nothing
    auto f = case_features(suite, decode);
    const auto has = [&](Feature x) { return std::find(f.begin(), f.end(), x) != f.end(); };
    CHECK(has(Feature::Paged));
    CHECK_FALSE(has(Feature::Ragged));
    CHECK_FALSE(has(Feature::PartialPage));  // 32 and 48 are whole pages
    CHECK_FALSE(has(Feature::Causal));
    CHECK(has(Feature::CrossLength));
    CHECK(has(Feature::Batch));
    CaseSpec mixed = paged_case({1, 5}, {30, 48}, 16, 6, true);
    mixed.causal = true;
    f = case_features(suite, mixed);
    CHECK(has(Feature::Ragged));
    CHECK(has(Feature::PartialPage));
    CHECK(has(Feature::Causal));  // the prefill chunk's early queries do not see its later keys
    CHECK_FALSE(has(Feature::EmptyRows));
    CHECK(meaningless_pair(Feature::Paged, Feature::Segments) != nullptr);
    CHECK(meaningless_pair(Feature::Bias, Feature::Ragged) != nullptr);
    CHECK(meaningless_pair(Feature::PartialPage, Feature::EmptyRows) != nullptr);
    CHECK(meaningless_pair(Feature::Paged, Feature::Window) == nullptr);
    CHECK(meaningless_pair(Feature::Ragged, Feature::Nan) == nullptr);
}

TEST_CASE("a paged case needs the paged bits, and a version-2 table is told why it cannot have them", "[paged][plan]") {
    const CaseSpec decode = paged_case({1, 1}, {32, 48}, 16, 6, true), mixed = paged_case({1, 5}, {30, 48}, 16, 6, true);
    KernelInfo v3;
    v3.features = ATTNGATE_FEATURE_ALL;  // every dense feature: a kernel opts in to paged explicitly
    CHECK(missing_features(v3, decode) == "kernel does not support: paged_kv");
    v3.features = ATTNGATE_FEATURE_ALL | ATTNGATE_FEATURE_PAGED_KV;
    CHECK(missing_features(v3, decode).empty());
    CHECK(missing_features(v3, mixed) == "kernel does not support: ragged");
    KernelInfo v2;
    v2.api_version = 2;
    v2.features = effective_features(2, 0xffffffffu);
    CHECK(v2.features == ATTNGATE_FEATURE_ALL);  // bits version 2 never defined mean nothing
    CHECK_THAT(missing_features(v2, decode), Catch::Contains("ABI version 2") && Catch::Contains("version 3"));
    CHECK(missing_features(v2, test::small_case("dense", 8, 8, 2, 2, 8)).empty());
    CHECK(effective_features(3, 0xffffffffu) == ATTNGATE_FEATURE_ALL_PAGED);
}

TEST_CASE("a failing paged golden names the stray reads the trace found, by sequence and query", "[paged][checks]") {
    const CaseSpec c = paged_case({1, 3, 2}, {30, 48, 20}, 16, 9, true);  // tokens: 0 | 1 2 3 | 4 5
    CHECK(paged_coords(c, 0) == "sequence 0, query 0, head 0, element 0");
    CHECK(paged_coords(c, ((3 * 4) + 2) * 8 + 5) == "sequence 1, query 2, head 2, element 5");
    CHECK(paged_coords(c, ((5 * 4) + 3) * 8 + 7) == "sequence 2, query 1, head 3, element 7");
    CheckResult fail(GoldenMetrics{}, Verdict::Fail);
    fail.reason = "3 NaN/inf output(s) where the golden is finite";
    attribute_unreadable(fail, c, UnreadableReads{2, 1, 8 * 4, 0});
    CHECK_THAT(fail.reason, Catch::StartsWith("3 NaN/inf output(s) where the golden is finite: the kernel read past kv_len (2 NaN"));
    CHECK_THAT(fail.reason, Catch::Contains("first at sequence 1, query 0, head 0, element 0"));
    CHECK_THAT(fail.reason, Catch::Contains("it also read a page outside its table (1 NaN output(s)"));
    CHECK(fail.as<GoldenMetrics>().nan_read_past_kv_len == 2);
    CHECK(fail.as<GoldenMetrics>().nan_read_outside_table == 1);
    CheckResult pass(GoldenMetrics{}, Verdict::Pass, "fine");
    attribute_unreadable(pass, c, UnreadableReads{2, 1, 0, 0});
    CHECK(pass.reason == "fine");
    CheckResult other = fail;
    other.reason = "max abs error";
    attribute_unreadable(other, c, UnreadableReads{});  // nothing traced: nothing added
    CHECK(other.reason == "max abs error");
    CheckResult worst(GoldenMetrics{}, Verdict::Fail, "max abs error 0.3 > tolerance 1e-07 at [0, 3, 2, 5]");
    worst.as<GoldenMetrics>().worst_index = ((3 * 4) + 2) * 8 + 5;
    worst.as<GoldenMetrics>().worst_coords = "[0, 3, 2, 5]";
    name_paged_worst(worst, c);
    CHECK(worst.reason == "max abs error 0.3 > tolerance 1e-07 at [0, 3, 2, 5]; [0, 3, 2, 5] is sequence 1, query 2, head 2, element 5");
    CHECK(worst.as<GoldenMetrics>().worst_coords == "sequence 1, query 2, head 2, element 5");
}

TEST_CASE("a paged batch's FLOPs and tokens count each sequence at its own lengths", "[paged][throughput]") {
    CaseSpec c = paged_case({1, 3}, {10, 4}, 16, 3, true);  // Hq 4, D = Dv = 8
    c.causal = true;
    const AttentionShape s = attention_shape(c);
    // Sequence 0: one query sees all 10 keys. Sequence 1: queries at positions 1, 2, 3 see 2, 3, 4 keys.
    CHECK(kept_scores(s) == (10 + 2 + 3 + 4) * 4);
    CHECK(attention_flops(s) == 2.0 * (8 + 8) * (10 + 2 + 3 + 4) * 4);
    CHECK(tokens_per_second(s, 0.5) == Approx(4 / 0.5));  // the batch's query tokens, not batch x seq_q
    c.window_left = 1;
    CHECK(kept_scores(attention_shape(c)) == (2 + 2 + 2 + 2) * 4);
}

TEST_CASE("the remote protocol carries a paged case: its paged object, pools, tables and output", "[paged][protocol]") {
    Suite suite;
    suite.seed = 3;
    const CaseSpec c = paged_case({1, 3}, {20, 7}, 8, 6, true);
    const json::object o = protocol_case(c, KernelSpec{});
    CHECK(o.at("batch").as_int64() == 2);
    CHECK(o.at("seq_q").as_int64() == 4);
    CHECK(o.at("seq_k").as_int64() == 20);
    const json::object &p = o.at("paged").as_object();
    CHECK(json::serialize(p.at("q_lens")) == "[1,3]");
    CHECK(json::serialize(p.at("kv_lens")) == "[20,7]");
    CHECK(p.at("page_size").as_int64() == 8);
    CHECK(p.at("pages").as_int64() == 6);
    CHECK(p.at("pages_per_seq").as_int64() == 3);
    CHECK(p.at("layout").as_string() == "scattered");
    CHECK(protocol_output_shape(c) == std::vector<int64_t>{4, 4, 8});  // [total_q, Hq, Dv]

    // The uploaded tensors are attngate inputs' own (the same draw), by protocol name.
    const CaseInputs in = generate_inputs(suite, c);
    std::vector<std::string> names;
    for (const auto &[name, array] : input_tensors(c, in)) {
        names.push_back(name);
        if (name == "k_pages") CHECK(array.shape == std::vector<int64_t>{6, 8, 2, 8});
        if (name == "page_table") CHECK(array.shape == std::vector<int64_t>{2, 3});
        if (name == "cu_q_lens") CHECK(array.shape == std::vector<int64_t>{3});
    }
    CHECK(names == std::vector<std::string>{"q", "k_pages", "v_pages", "page_table", "kv_lens", "cu_q_lens"});
    CHECK_FALSE(protocol_case(test::small_case("dense", 1, 16, 2, 2, 8), KernelSpec{}).contains("paged"));
}

TEST_CASE("a paged case's memory estimate counts its page table", "[paged][suite]") {
    // One long sequence among short ones: the table has a row of the long one's width for each.
    std::string kv_lens = "4096";
    for (int i = 0; i < 255; ++i) kv_lens += ", 1";
    auto s = parse_case(R"("paged": {"kv_lens": [)" + kv_lens + R"(], "page_size": 1}, "heads_q": 1, "head_dim": 1)");
    REQUIRE(s);
    const CaseSpec &c = s->cases[0];
    const CaseInputs in = generate_inputs(*s, c);
    const auto bytes = [](const auto &v) { return static_cast<int64_t>(v.size() * sizeof(v[0])); };
    const int64_t held = bytes(in.q) + bytes(in.k) + bytes(in.v) + bytes(in.page_table) + bytes(in.kv_lens) + bytes(in.cu_q_lens);
    CHECK(bytes(in.page_table) == 256 * 4096 * 4);
    CHECK(c.estimated_bytes() >= 4 * held);  // the inputs are held four times (suite.hpp)
    // The issue's case: 65 rows of 2^24 one-slot pages, 4.4 GB of table under a 1 GiB budget.
    std::string issue = "16777216";
    for (int i = 0; i < 64; ++i) issue += ", 1";
    auto big = parse_case(R"("paged": {"kv_lens": [)" + issue + R"(], "page_size": 1}, "heads_q": 1, "head_dim": 1)");
    REQUIRE_FALSE(big);
    CHECK_THAT(big.error().message, Catch::Contains("$.cases[0]: case \"p\" needs about") && Catch::Contains("memory_budget_mb of 1024 MiB"));
}
