// Suite parsing and validation.
#include "plan/suite.hpp"

#include <cmath>
#include <initializer_list>
#include <regex>
#include <set>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/sizes.hpp"
#include "plan/paged.hpp"

namespace attngate {

const char *dtype_name(attngate_dtype d) { return d == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32"; }

std::string KernelSpec::label() const {
    if (block_q <= 0 && block_k <= 0) return kernel;
    return fmt::format("{}[bq={},bk={}]", kernel, block_q, block_k);
}

namespace {

/// The product, saturating: dimensions come from the suite file, and 2^62 must fail the budget, not wrap.
constexpr auto mul = saturating_product;

int64_t paged_estimated_bytes(const CaseSpec &c) {
    const PagedSpec &p = *c.paged;
    const int64_t row = saturating_add(c.head_dim, c.head_dim_v);  // K and V of one slot and head
    const int64_t q = mul({c.seq_q, c.heads_q, c.head_dim}), out = mul({c.seq_q, c.heads_q, c.head_dim_v});
    const int64_t pool = mul({p.pages, p.page_size, c.heads_kv, row});
    int64_t longest = 0;  // native's per-head scores of one sequence
    for (size_t b = 0; b < p.kv_lens.size(); ++b) longest = std::max(longest, mul({p.q_lens[b], p.kv_lens[b]}));
    // The int32 page table [batch, pages_per_seq] (256 GiB for one 2^24-key sequence among
    // 65,535 short ones), kv_lens and cu_q_lens travel with the inputs.
    const int64_t batch = static_cast<int64_t>(p.kv_lens.size());
    const int64_t tables = saturating_add(mul({batch, p.pages_per_seq()}), mul({2, batch}));
    // Inputs four times (host, the kernel's private copy, widened, a diagnosis variant): f32
    // values and, for bf16, the operand bits beside them. Then the output as for a dense case,
    // one sequence gathered dense (native, reference) and its scores.
    const int64_t value_bytes = c.dtype == ATTNGATE_DTYPE_BF16 ? 4 + 2 : 4;
    int64_t total = saturating_add(mul({4, value_bytes, saturating_add(q, pool)}), mul({4, 4, tables}));
    // While the inputs are drawn: the layout's shuffle (order 4, owner 8, unused 4 bytes and a
    // held flag per page), and the int64 offsets of the NaN slots, at most every slot of the
    // unused pages and of each sequence's last page.
    const int64_t nan_slots = mul({saturating_add(p.pages - p.pages_needed(), batch), p.page_size, c.heads_kv, row});
    for (int64_t term : {mul({4 + 8 + 8, out}), mul({8, p.max_kv(), c.heads_kv, row}), mul({4, longest}), mul({17, p.pages}),
                         mul({8, nan_slots})})
        total = saturating_add(total, term);
    return total;
}

}  // namespace

float CaseSpec::effective_scale() const {
    return scale ? static_cast<float>(*scale) : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

std::string CaseSpec::rules_sha256() const {
    return sha256_hex(fmt::format("scale={:a};softcap={:a};causal={};top_left={};window={},{};dtype={}", effective_scale(), softcap,
                                  causal, top_left, window_left, window_right, static_cast<int>(dtype)));
}

int64_t CaseSpec::estimated_bytes() const {
    if (paged) return paged_estimated_bytes(*this);
    const int64_t q = mul({batch, seq_q, heads_q, head_dim});
    const int64_t kv = mul({batch, seq_k, heads_kv, saturating_add(head_dim, head_dim_v)});
    const int64_t out = mul({batch, seq_q, heads_q, head_dim_v});
    int64_t bias = 0;
    if (!bias_shape.empty()) {
        bias = 1;
        for (int64_t d : bias_shape) bias = saturating_mul(bias, d);
    }
    // Inputs twice (host copy and the kernels' widened copy), output in f32 for the
    // kernel and f64 for the golden, bias, and native's per-head score matrix.
    int64_t total = mul({2, 4, saturating_add(q, kv)});
    for (int64_t term : {mul({4 + 8 + 8, out}), mul({4, bias}), mul({4, seq_q, seq_k})}) total = saturating_add(total, term);
    return total;
}

const CaseSpec *Suite::find_case(std::string_view id) const {
    for (const auto &c : cases)
        if (c.id == id) return &c;
    return nullptr;
}

namespace {

const std::regex kIdPattern("[A-Za-z0-9_.-]+");

std::optional<Error> read_kernel(const json::value &v, const std::string &file, const std::string &path,
                                 KernelSpec &k) {
    k.json_path = path;
    if (v.is_string()) {
        k.kernel = std::string(v.get_string());
        return std::nullopt;
    }
    ObjectReader r(v, file, path);
    k.kernel = r.required_string("kernel");
    k.block_q = r.integer("block_q", 0, 1, 1 << 20);
    k.block_k = r.integer("block_k", 0, 1, 1 << 20);
    return r.finish();
}

void read_window(ObjectReader &r, CaseSpec &c) {
    const json::value *w = r.raw("window");
    if (!w || !r.ok()) return;
    const auto bad = [&] { r.fail_at("window", "expected [left, right], integers >= -1 (-1: unbounded)"); };
    if (!w->is_array() || w->get_array().size() != 2) return bad();
    const auto &a = w->get_array();
    if (!a[0].is_int64() || !a[1].is_int64() || a[0].get_int64() < -1 || a[1].get_int64() < -1) return bad();
    c.window_left = a[0].get_int64();
    c.window_right = a[1].get_int64();
}

void read_segments(ObjectReader &r, CaseSpec &c) {
    const json::value *s = r.raw("segments");
    if (!s || !r.ok()) return;
    if (s->is_string() && s->get_string() == "per_token") c.segments_per_token = true;
    else if (s->is_int64() && s->get_int64() >= 1 && s->get_int64() <= std::min(c.seq_q, c.seq_k)) c.segments = s->get_int64();
    else r.fail_at("segments", fmt::format("expected \"per_token\" or an integer in [1, min(seq_q, seq_k) = {}]", std::min(c.seq_q, c.seq_k)));
    if (c.segments_per_token && c.seq_q != c.seq_k) r.fail_at("segments", "\"per_token\" needs seq_q == seq_k");
}

void read_bias(ObjectReader &r, CaseSpec &c) {
    const json::value *b = r.raw("bias");
    if (!b || !r.ok()) return;
    const int64_t full[4] = {c.batch, c.heads_q, c.seq_q, c.seq_k};
    if (b->is_bool()) {
        if (b->get_bool()) c.bias_shape.assign(full, full + 4);
        return;
    }
    const std::string expected = fmt::format(
        "expected true, false or a shape [b, h, sq, sk] broadcastable to [{}, {}, {}, {}] (each dim 1 or full)",
        full[0], full[1], full[2], full[3]);
    if (!b->is_array() || b->get_array().size() != 4) return r.fail_at("bias", expected);
    for (int d = 0; d < 4; ++d) {
        const auto &e = b->get_array()[d];
        if (!e.is_int64() || (e.get_int64() != 1 && e.get_int64() != full[d])) return r.fail_at(fmt::format("bias[{}]", d), expected);
        c.bias_shape.push_back(e.get_int64());
    }
}

void read_nan(ObjectReader &r, CaseSpec &c) {
    const json::value *n = r.raw("nan");
    if (!n || !r.ok()) return;
    ObjectReader nr(*n, r.file(), r.path_of("nan"));
    NanInjection inj;
    inj.tensor = nr.required_string("tensor");
    const auto idx = nr.integer_array("index", {});
    if (nr.ok() && inj.tensor != "q" && inj.tensor != "k" && inj.tensor != "v") nr.fail_at("tensor", "expected \"q\", \"k\" or \"v\"");
    const int64_t seq = inj.tensor == "q" ? c.seq_q : c.seq_k;
    const int64_t heads = inj.tensor == "q" ? c.heads_q : c.heads_kv;
    const int64_t dim = inj.tensor == "v" ? c.head_dim_v : c.head_dim;
    const int64_t ext[4] = {c.batch, seq, heads, dim};
    if (nr.ok() && idx.size() != 4) nr.fail_at("index", "expected [b, s, h, d]");
    for (size_t d = 0; nr.ok() && d < 4; ++d) {
        if (idx[d] < 0 || idx[d] >= ext[d])
            nr.fail_at(fmt::format("index[{}]", d), fmt::format("expected an index in [0, {})", ext[d]));
        else inj.index[d] = idx[d];
    }
    if (auto e = nr.finish()) return r.adopt(std::move(e));
    c.nan = inj;
}

std::optional<Error> read_case(const json::value &v, const std::string &file, const std::string &path, CaseSpec &c) {
    ObjectReader r(v, file, path);
    c.id = r.required_string("id");
    if (r.ok() && !std::regex_match(c.id, kIdPattern)) r.fail_at("id", "expected letters, digits, '_', '.' or '-'");
    if (r.raw("paged")) {  // raw(): marks the field known, so an unknown-field message lists it
        read_paged_shape(r, c);
        reject_dense_fields(r);
    } else {
        c.batch = r.integer("batch", 1, 1);
        c.seq_q = r.required_integer("seq_q", 1);
        c.seq_k = r.integer("seq_k", c.seq_q, 1);
    }
    c.heads_q = r.required_integer("heads_q", 1);
    c.heads_kv = r.integer("heads_kv", c.heads_q, 1);
    if (r.ok() && c.heads_q % c.heads_kv != 0)
        r.fail_at("heads_kv", fmt::format("expected a divisor of heads_q ({}), got {}", c.heads_q, c.heads_kv));
    c.head_dim = r.required_integer("head_dim", 1);
    c.head_dim_v = r.integer("head_dim_v", c.head_dim, 1);
    const std::string dtype = r.string("dtype", "f32");
    if (dtype == "bf16") c.dtype = ATTNGATE_DTYPE_BF16;
    else if (dtype != "f32") r.fail_at("dtype", fmt::format("expected \"f32\" or \"bf16\", got \"{}\"", dtype));
    c.causal = r.boolean("causal", false);
    const std::string alignment = r.string("causal_alignment", "bottom_right");
    if (alignment == "top_left") c.top_left = true;
    else if (r.ok() && alignment != "bottom_right")
        r.fail_at("causal_alignment", fmt::format("expected \"bottom_right\" or \"top_left\", got \"{}\"", alignment));
    read_window(r, c);
    read_segments(r, c);
    read_bias(r, c);
    c.softcap = r.number("softcap", 0.0);
    if (r.ok() && !(c.softcap >= 0 && std::isfinite(c.softcap))) r.fail_at("softcap", "expected a finite number >= 0 (0: off)");
    // raw(), not has(): an optional field must be named in the unknown-field message even when absent.
    if (r.raw("scale")) {
        c.scale = r.number("scale", 1.0);
        if (r.ok() && !(*c.scale > 0 && std::isfinite(*c.scale))) r.fail_at("scale", "expected a finite number > 0");
    }
    c.qk_amplitude = r.number("qk_amplitude", 1.0);
    c.v_amplitude = r.number("v_amplitude", 1.0);
    c.bias_amplitude = r.number("bias_amplitude", 1.0);
    for (const char *k : {"qk_amplitude", "v_amplitude", "bias_amplitude"})
        if (r.ok() && r.has(k) && !(r.number(k, 1.0) > 0 && r.number(k, 1.0) < 1e15)) r.fail_at(k, "expected a number in (0, 1e15)");
    read_nan(r, c);
    if (r.raw("memory_calls")) c.memory_calls = r.integer("memory_calls", 20, 3, 100000);
    if (r.raw("perf_threshold_pct")) {
        c.perf_threshold_pct = r.number("perf_threshold_pct", 5.0);
        if (r.ok() && !(*c.perf_threshold_pct > 0 && *c.perf_threshold_pct < 100)) r.fail_at("perf_threshold_pct", "expected a percentage in (0, 100)");
    }
    if (r.raw("bitwise_stable")) c.bitwise_stable = r.boolean("bitwise_stable", false);
    if (r.raw("deterministic")) c.deterministic = r.boolean("deterministic", false);
    c.timed = r.boolean("timed", true);
    c.kernels = r.string_array("kernels", "a kernel label");
    check_paged_case(r, c);
    return r.finish();
}

void read_perf(ObjectReader &r, Suite &s) {
    const json::value *v = r.raw("perf");
    if (!v || !r.ok()) return;
    ObjectReader pr(*v, r.file(), r.path_of("perf"));
    PerfSettings &p = s.perf;
    p.repetitions = pr.integer("repetitions", p.repetitions, 2, 100000);
    p.min_time_s = pr.number("min_time_s", p.min_time_s);
    if (pr.ok() && !(p.min_time_s > 0 && p.min_time_s <= 60)) pr.fail_at("min_time_s", "expected seconds in (0, 60]");
    p.threshold_pct = pr.number("threshold_pct", p.threshold_pct);
    if (pr.ok() && !(p.threshold_pct > 0 && p.threshold_pct < 100)) pr.fail_at("threshold_pct", "expected a percentage in (0, 100)");
    p.alpha = pr.number("alpha", p.alpha);
    if (pr.ok() && !(p.alpha > 0 && p.alpha < 1)) pr.fail_at("alpha", "expected a probability in (0, 1)");
    p.compile_threshold_pct = pr.number("compile_threshold_pct", p.compile_threshold_pct);
    if (pr.ok() && !(p.compile_threshold_pct > 0 && p.compile_threshold_pct < 1000))
        pr.fail_at("compile_threshold_pct", "expected a percentage in (0, 1000)");
    p.kernels = pr.string_array("kernels", "a kernel label");
    p.require_verdict = pr.boolean("require_verdict", false);
    if (pr.raw("threads")) p.threads = static_cast<int>(pr.integer("threads", 0, 0, 1024));
    r.adopt(pr.finish());
}

void read_known_races(ObjectReader &r, Suite &s) {
    const json::value *v = r.raw("known_races");
    if (!v || !r.ok()) return;
    if (!v->is_array()) return r.fail_at("known_races", "expected an array of {\"kernel\", \"race\", \"reason\", \"reviewed\"} objects");
    for (size_t i = 0; i < v->get_array().size() && r.ok(); ++i) {
        ObjectReader kr(v->get_array()[i], r.file(), fmt::format("{}[{}]", r.path_of("known_races"), i));
        KnownRace k{kr.required_string("kernel"), kr.required_string("race"), kr.required_string("reason"), kr.required_string("reviewed")};
        for (const auto &[key, text] : {std::pair{"race", &k.race}, {"reason", &k.reason}, {"reviewed", &k.reviewed}})
            if (kr.ok() && text->find_first_not_of(" \t") == std::string::npos) kr.fail_at(key, "expected a non-empty string");
        if (kr.ok() && k.race.find('`') != std::string::npos)
            kr.fail_at("race", "expected the signature without its backticks");
        r.adopt(kr.finish());
        s.known_races.push_back(std::move(k));
    }
}

}  // namespace

Result<Suite> load_suite(const std::filesystem::path &path) {
    auto text = read_file(path);
    if (!text) return std::unexpected(text.error());
    return parse_suite(*text, path);
}

Result<Suite> parse_suite(std::string_view text, const std::filesystem::path &path) {
    auto doc = parse_json(text, path.string());
    if (!doc) return std::unexpected(doc.error());
    const std::string file = path.string();
    Suite s;
    s.file = path;
    ObjectReader r(*doc, file, "$");
    s.name = r.required_string("name");
    if (r.ok() && !std::regex_match(s.name, kIdPattern)) r.fail_at("name", "expected letters, digits, '_', '.' or '-'");
    s.seed = static_cast<uint64_t>(r.integer("seed", 0, 0));
    s.memory_budget_mb = r.integer("memory_budget_mb", 1024, 1, int64_t{1} << 30);  // << 20 stays in range
    s.memory_calls = r.integer("memory_calls", 20, 3, 100000);
    s.warmup_calls = r.integer("warmup_calls", 2, 0, 100000);
    s.timeout_s = r.number("timeout_s", 60.0);
    if (r.ok() && !(s.timeout_s > 0 && std::isfinite(s.timeout_s))) r.fail_at("timeout_s", "expected a finite number of seconds > 0");
    s.bitwise_stable = r.boolean("bitwise_stable", false);
    s.deterministic = r.boolean("deterministic", false);
    s.program_stable = r.boolean("program_stable", false);
    s.retention_limit_kb = r.integer("retention_limit_kb", 1024, 0, int64_t{1} << 40);
    s.threads = static_cast<int>(r.integer("threads", 2, 0, 1024));
    s.peak_growth_pct = r.number("peak_growth_pct", 10.0);
    if (r.ok() && !(s.peak_growth_pct >= 0 && std::isfinite(s.peak_growth_pct))) r.fail_at("peak_growth_pct", "expected a finite percentage >= 0");
    r.string("description", "");
    read_perf(r, s);
    read_known_races(r, s);
    const json::value *ks = r.raw("kernels");
    const json::value *cs = r.raw("cases");
    if (r.ok() && (!ks || !ks->is_array() || ks->get_array().empty()))
        r.fail_at("kernels", "expected a non-empty array of kernel names or {\"kernel\", \"block_q\", \"block_k\"} objects");
    if (r.ok() && (!cs || !cs->is_array() || cs->get_array().empty()))
        r.fail_at("cases", "expected a non-empty array of case objects");
    if (auto e = r.finish()) return std::unexpected(*e);

    std::set<std::string> labels;
    for (size_t i = 0; i < ks->get_array().size(); ++i) {
        KernelSpec k;
        const std::string kpath = fmt::format("$.kernels[{}]", i);
        if (auto e = read_kernel(ks->get_array()[i], file, kpath, k)) return std::unexpected(*e);
        if (!labels.insert(k.label()).second) return fail(ErrorKind::BadInput, "{}: {}: duplicate kernel \"{}\"", file, kpath, k.label());
        s.kernels.push_back(std::move(k));
    }
    for (size_t i = 0; i < s.perf.kernels.size(); ++i)
        if (!labels.contains(s.perf.kernels[i]))
            return fail(ErrorKind::BadInput, "{}: $.perf.kernels[{}]: \"{}\" is not one of the suite's kernels", file, i, s.perf.kernels[i]);
    std::set<std::pair<std::string, std::string>> races;
    for (size_t i = 0; i < s.known_races.size(); ++i) {
        const KnownRace &k = s.known_races[i];
        if (!labels.contains(k.kernel))
            return fail(ErrorKind::BadInput, "{}: $.known_races[{}].kernel: \"{}\" is not one of the suite's kernels", file, i, k.kernel);
        if (!races.emplace(k.kernel, k.race).second)
            return fail(ErrorKind::BadInput, "{}: $.known_races[{}]: kernel \"{}\" lists race \"{}\" twice", file, i, k.kernel, k.race);
    }
    std::set<std::string> ids;
    for (size_t i = 0; i < cs->get_array().size(); ++i) {
        CaseSpec c;
        const std::string cpath = fmt::format("$.cases[{}]", i);
        if (auto e = read_case(cs->get_array()[i], file, cpath, c)) return std::unexpected(*e);
        if (!ids.insert(c.id).second) return fail(ErrorKind::BadInput, "{}: {}.id: duplicate case id \"{}\"", file, cpath, c.id);
        for (size_t j = 0; j < c.kernels.size(); ++j)
            if (!labels.contains(c.kernels[j]))
                return fail(ErrorKind::BadInput, "{}: {}.kernels[{}]: \"{}\" is not one of the suite's kernels", file, cpath, j, c.kernels[j]);
        const int64_t budget = s.memory_budget_mb << 20;
        if (c.estimated_bytes() > budget)
            return fail(ErrorKind::BadInput, "{}: {}: case \"{}\" needs about {} MiB, over the suite's memory_budget_mb of {} MiB",
                        file, cpath, c.id, c.estimated_bytes() >> 20, s.memory_budget_mb);
        s.cases.push_back(std::move(c));
    }
    return s;
}

}  // namespace attngate
