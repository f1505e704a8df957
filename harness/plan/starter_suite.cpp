// The starter suite: greedy pairwise construction (as AETG, Cohen et al. 1997): each new
// case starts from a pair still missing, adds every declared feature that covers more
// missing pairs, and the best of a few such candidates is kept. A case's features are
// read back from the case as built (case_features), never assumed, and the finished suite
// is checked with suite_coverage, the same count `suite coverage` prints.
#include "plan/starter_suite.hpp"

#include <algorithm>
#include <bitset>
#include <optional>
#include <random>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "plan/coverage.hpp"
#include "plan/plan.hpp"

namespace attngate {

namespace json = boost::json;

namespace {

using Features = std::bitset<kFeatureCount>;
using PairSet = std::array<std::array<bool, kFeatureCount>, kFeatureCount>;

constexpr uint64_t kSeed = 1;         ///< the suite's seed: inputs and features depend on it
constexpr int kCandidates = 24;       ///< candidates per new case
constexpr size_t kMaxCases = 200;     ///< new combined cases per kernel: far above what any needs (2-4)

constexpr size_t at(Feature f) { return static_cast<size_t>(f); }

/// A case's name part for a feature: letters, digits and '_' only (a case id's alphabet).
std::string tag(Feature f, const CaseSpec &c) {
    switch (f) {
    case Feature::Gqa: return c.heads_kv == 1 ? "mqa" : "gqa";
    case Feature::HeadDimV: return "dv16";
    case Feature::CrossLength: return "cross";
    case Feature::PartialBlock: return "partial_block";
    case Feature::Batch: return "batch";
    case Feature::PartialPage: return "partial_page";
    default: return feature_name(f);  // the others are ids already ("causal", "empty_rows")
    }
}

/// `want` with what building it brings along: a ragged or partial-page case is paged, a
/// paged case has Sq != Sk (one query, many keys), a causal paged case needs a prefill
/// chunk to mask anything, and empty rows need Sq > Sk under a causal mask or a window.
Features closed(Features want, uint32_t bits) {
    if (want[at(Feature::Ragged)] || want[at(Feature::PartialPage)]) want.set(at(Feature::Paged));
    if (want[at(Feature::Paged)]) want.set(at(Feature::CrossLength));
    if (want[at(Feature::Paged)] && want[at(Feature::Causal)] && declares(bits, Feature::Ragged)) want.set(at(Feature::Ragged));
    if (want[at(Feature::EmptyRows)]) {
        want.set(at(Feature::CrossLength));
        if (!want[at(Feature::Causal)] && !want[at(Feature::Window)])
            want.set(at(declares(bits, Feature::Causal) ? Feature::Causal : Feature::Window));
    }
    return want;
}

/// True when one case a kernel declaring `bits` runs can have every feature of `want`.
bool buildable(const Features &want, uint32_t bits) {
    for (Feature a : all_features()) {
        if (!want[at(a)]) continue;
        if (!declares(bits, a)) return false;
        for (Feature b : all_features())
            if (a < b && want[at(b)] && (meaningless_pair(a, b) || unreachable_pair(a, b, bits))) return false;
    }
    return true;
}

/// The case JSON for `want`: small shapes, each feature switched on so that it changes the
/// output (a causal mask over Sq <= Sk with Sq > 1, a window narrower than the keys, the NaN in
/// `nan_tensor` at the last key, which every last query row sees and a mask hides from others).
json::object realize(const Features &want, uint32_t bits, size_t number, const char *nan_tensor = "k") {
    const auto has = [&](Feature f) { return want[at(f)]; };
    const bool bf16 = has(Feature::Bf16) || (!has(Feature::F32) && !declares(bits, Feature::F32));
    const int64_t heads_kv = has(Feature::Gqa) ? (number % 2 ? 1 : 2) : 4;
    json::object c{{"id", "candidate"}};
    json::array nan_index;
    if (has(Feature::Paged)) {
        const size_t seqs = has(Feature::Batch) ? 3 : 1;
        const std::array<int64_t, 3> kv = has(Feature::PartialPage)    ? std::array<int64_t, 3>{37, 150, 64}
                                          : has(Feature::PartialBlock) ? std::array<int64_t, 3>{48, 96, 160}
                                                                       : std::array<int64_t, 3>{128, 256, 128};
        const std::array<int64_t, 3> ragged{4, 1, 7};
        json::array kv_lens, q_lens;
        for (size_t b = 0; b < seqs; ++b) kv_lens.push_back(kv[b]), q_lens.push_back(has(Feature::Ragged) ? ragged[b] : 1);
        c["paged"] = {{"q_lens", std::move(q_lens)}, {"kv_lens", std::move(kv_lens)}, {"page_size", 16}};
        nan_index = {static_cast<int64_t>(seqs) - 1, kv[seqs - 1] - 1, heads_kv - 1, 5};
    } else {
        const int64_t sk = has(Feature::PartialBlock) ? 80 : 128;
        const int64_t sq = has(Feature::EmptyRows) ? sk + 32 : has(Feature::CrossLength) ? sk / 2 : sk;
        const int64_t batch = has(Feature::Batch) ? 2 : 1;
        if (batch > 1) c["batch"] = batch;
        c["seq_q"] = sq;
        if (sk != sq) c["seq_k"] = sk;
        nan_index = {batch - 1, sk - 1, heads_kv - 1, 5};
    }
    c["heads_q"] = 4;
    if (heads_kv != 4) c["heads_kv"] = heads_kv;
    c["head_dim"] = 32;
    if (has(Feature::HeadDimV)) c["head_dim_v"] = 16;
    if (has(Feature::Causal)) c["causal"] = true;
    if (has(Feature::Window)) c["window"] = has(Feature::Causal) ? json::array{16, 0} : json::array{16, 8};
    if (has(Feature::Segments)) c["segments"] = 2;
    if (has(Feature::Bias)) c["bias"] = true;
    if (has(Feature::Softcap)) c["softcap"] = 20, c["qk_amplitude"] = 4;  // integers: Boost.JSON would write 2E1
    if (has(Feature::Nan)) c["nan"] = {{"tensor", nan_tensor}, {"index", std::move(nan_index)}};
    if (bf16) c["dtype"] = "bf16";
    return c;
}

/// A case as the suite will hold it: its JSON, parsed, and the features it really has.
struct Built {
    json::object json;
    CaseSpec spec;
    Features features;
};

/// Parses `c` as the only case of a suite with the starter's seed.
Built parse_case(json::object c) {
    const json::object one{{"name", "starter"}, {"seed", kSeed}, {"kernels", json::array{"k"}}, {"cases", json::array{c}}};
    auto suite = parse_suite(json::serialize(one), "starter.json");
    ATTNGATE_CHECK(suite.has_value());  // realize() builds only valid cases
    Built b{std::move(c), suite->cases.front(), {}};
    for (Feature f : case_features(*suite, b.spec)) b.features.set(at(f));
    return b;
}

/// The id of a case: its dtype and features ("f32_causal"), then `tail` ("f32_causal_nan_in_v"),
/// or for a case that combines many, "pairs_2_bf16"; made unique with a suffix.
std::string case_id(const Built &b, bool combined, size_t combos, const std::vector<Built> &cases, std::string_view tail = {}) {
    const char *dtype = b.spec.dtype == ATTNGATE_DTYPE_BF16 ? "bf16" : "f32";
    std::string id = combined ? fmt::format("pairs_{}_{}", combos, dtype) : dtype;
    if (!combined)
        for (Feature f : all_features())
            if (b.features[at(f)] && f != Feature::F32 && f != Feature::Bf16) id += fmt::format("_{}", tag(f, b.spec));
    id += tail;
    const auto taken = [&](const std::string &x) {
        return std::any_of(cases.begin(), cases.end(), [&](const Built &c) { return c.spec.id == x; });
    };
    std::string unique = id;
    for (int n = 2; taken(unique); ++n) unique = fmt::format("{}_{}", id, n);
    return unique;
}

std::vector<std::pair<Feature, Feature>> open_pairs(uint32_t bits, const PairSet &met) {
    std::vector<std::pair<Feature, Feature>> open;
    for (Feature a : all_features())
        for (Feature b : all_features())
            if (a < b && required_pair(a, b, bits) && !met[at(a)][at(b)]) open.emplace_back(a, b);
    return open;
}

int gain(const std::vector<std::pair<Feature, Feature>> &open, const Features &f) {
    return static_cast<int>(std::count_if(open.begin(), open.end(), [&](const auto &p) { return f[at(p.first)] && f[at(p.second)]; }));
}

/// The best of kCandidates new cases for a kernel declaring `bits`, or nullopt when none
/// covers an open pair.
std::optional<Built> next_case(const KernelInfo &kernel, const std::vector<std::pair<Feature, Feature>> &open, size_t number) {
    const uint32_t bits = kernel.features;
    std::vector<Feature> declared;
    for (Feature f : all_features())
        if (declares(bits, f)) declared.push_back(f);
    std::mt19937 rng(static_cast<uint32_t>(number + 1));  // the same kernels, the same suite
    std::optional<Built> best;
    int best_gain = 0;
    for (int t = 0; t < kCandidates; ++t) {
        const auto &[a, b] = open[t == 0 ? 0 : rng() % open.size()];
        Features want = closed(Features{}.set(at(a)).set(at(b)), bits);
        if (!buildable(want, bits)) continue;
        std::shuffle(declared.begin(), declared.end(), rng);
        for (Feature f : declared) {
            const Features more = closed(Features(want).set(at(f)), bits);
            if (more != want && buildable(more, bits) && gain(open, more) > gain(open, want)) want = more;
        }
        Built c = parse_case(realize(want, bits, number));
        if (!missing_features(kernel, c.spec).empty()) continue;
        if (const int g = gain(open, c.features); g > best_gain) best = std::move(c), best_gain = g;
    }
    return best;
}

/// The suite's text: the settings one per line, then one case per line.
std::string format_suite(const std::string &name, const std::vector<const KernelInfo *> &kernels, const std::vector<Built> &cases) {
    json::array names;
    for (const auto *k : kernels) names.push_back(json::string(k->name));
    std::string s = fmt::format(
        "{{\n  \"name\": {},\n  \"description\": {},\n  \"seed\": {},\n  \"kernels\": {},\n  \"cases\": [\n",
        json::serialize(json::string(name)),
        json::serialize(json::string("Written by attngate init from what the kernels declare: each feature alone, then "
                                     "cases that combine them so that every pair of declared features meets in a case "
                                     "(attngate suite coverage). Add your production shapes.")),
        kSeed, json::serialize(names));
    for (size_t i = 0; i < cases.size(); ++i) s += fmt::format("    {}{}\n", json::serialize(cases[i].json), i + 1 < cases.size() ? "," : "");
    return s + "  ]\n}\n";
}

}  // namespace

Result<StarterSuite> starter_suite(const std::string &name, const std::vector<const KernelInfo *> &kernels) {
    if (kernels.empty()) return fail(ErrorKind::Usage, "a starter suite needs at least one kernel");
    for (const auto *k : kernels)
        if (!declares(k->features, Feature::F32) && !declares(k->features, Feature::Bf16))
            return fail(ErrorKind::BadInput, "kernel \"{}\" ({}) declares neither f32 nor bf16 (ATTNGATE_FEATURE_F32, _BF16): no case can run it",
                        k->name, k->origin);
    std::vector<Built> cases;
    std::vector<json::object> shapes;  // each case's JSON without its id: one case per shape
    std::vector<PairSet> met(kernels.size());
    size_t combos = 0;
    enum class Kind { Single, Combined, MaskedVNan };
    const auto add = [&](Built c, Kind kind) {
        json::object shape = c.json;
        shape.erase("id");
        if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end()) return;
        shapes.push_back(shape);
        const bool combined = kind == Kind::Combined;
        if (kind != Kind::Single) c.json["timed"] = false;  // for correctness: its shape is no one's production shape
        c.json["id"] = case_id(c, combined, combined ? ++combos : 0, cases, kind == Kind::MaskedVNan ? "_in_v" : "");
        cases.push_back(parse_case(std::move(c.json)));  // inputs are seeded by the id: read the features again
        if (kind == Kind::MaskedVNan) return;  // counted for no pair: a kernel that declares the leak declines it
        for (size_t j = 0; j < kernels.size(); ++j)
            if (missing_features(*kernels[j], cases.back().spec).empty())
                for (Feature x : all_features())
                    for (Feature y : all_features())
                        if (cases.back().features[at(x)] && cases.back().features[at(y)]) met[j][at(x)][at(y)] = true;
    };
    // Each feature alone first (with what building it brings along), so that a failure names
    // it: a plain case per dtype, then every other declared feature in the kernel's first dtype.
    for (const auto *kernel : kernels) {
        const uint32_t bits = kernel->features;
        const Feature dtype = declares(bits, Feature::F32) ? Feature::F32 : Feature::Bf16;
        std::vector<Feature> order{Feature::F32, Feature::Bf16};
        for (Feature f : all_features())
            if (f != Feature::F32 && f != Feature::Bf16) order.push_back(f);
        for (Feature f : order) {
            const bool is_dtype = f == Feature::F32 || f == Feature::Bf16;
            const Features want = closed(Features{}.set(at(is_dtype ? f : dtype)).set(at(f)), bits);
            if (declares(bits, f) && buildable(want, bits)) add(parse_case(realize(want, bits, cases.size())), Kind::Single);
        }
        // A NaN in V at a key some rows mask: a kernel that masks with a zero weight lets 0 * NaN
        // reach those rows, which the other cases' NaN, in K, cannot show. Not for a kernel that
        // declares that leak (an adapter's conventions.masked_nan_leaks), which would decline it.
        if (declares_masked_nan_leak(*kernel, "v")) continue;
        for (Feature mask : {Feature::Causal, Feature::Window, Feature::Segments}) {
            const Features want = closed(Features{}.set(at(dtype)).set(at(Feature::Nan)).set(at(mask)), bits);
            if (!declares(bits, mask) || !buildable(want, bits)) continue;
            add(parse_case(realize(want, bits, cases.size(), "v")), Kind::MaskedVNan);
            break;
        }
    }
    // Then cases that combine them until every pair each kernel declares meets in a case it runs.
    for (size_t k = 0; k < kernels.size(); ++k) {
        size_t rounds = 0;
        for (auto open = open_pairs(kernels[k]->features, met[k]); !open.empty(); open = open_pairs(kernels[k]->features, met[k])) {
            ATTNGATE_CHECK(++rounds < kMaxCases);
            auto c = next_case(*kernels[k], open, cases.size());
            ATTNGATE_CHECK(c.has_value());  // every required pair is buildable: closed() and realize() agree with coverage
            add(std::move(*c), Kind::Combined);
        }
    }
    StarterSuite out{format_suite(name, kernels, cases), cases.size(), {}};
    // The promise, checked as `suite coverage --each-kernel` checks it.
    auto suite = parse_suite(out.text, name + ".json");
    ATTNGATE_CHECK(suite.has_value());
    auto plan = make_plan(*suite, kernels, {});
    ATTNGATE_CHECK(plan.has_value());
    out.coverage = suite_coverage(*suite, *plan);
    ATTNGATE_CHECK(out.coverage.missing_for_some_kernel().empty());
    return out;
}

}  // namespace attngate
