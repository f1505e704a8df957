// Feature detection per case and the pair table of a suite.
#include "plan/coverage.hpp"

#include <algorithm>

#include "plan/inputs.hpp"

namespace attngate {

namespace {

/// The default key block of the flash kernel and of the Pallas TPU kernel it reproduces.
constexpr int64_t kDefaultBlockK = 128;

/// The key position row i is aligned to (kernel_abi.h: bottom-right unless top-left).
int64_t position(const CaseSpec &c, int64_t i) { return c.top_left ? i : i + c.seq_k - c.seq_q; }

/// The (q_len, kv_len) of each sequence: one for a dense case, whose batch shares them.
std::vector<std::pair<int64_t, int64_t>> sequences(const CaseSpec &c) {
    if (!c.paged) return {{c.seq_q, c.seq_k}};
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t b = 0; b < c.paged->kv_lens.size(); ++b) out.emplace_back(c.paged->q_lens[b], c.paged->kv_lens[b]);
    return out;
}

/// True when the causal mask removes a key from some row of some sequence: its lowest row
/// sits before the last key.
bool causal_masks(const CaseSpec &c) {
    if (!c.causal) return false;
    for (const auto &[sq, sk] : sequences(c))
        if ((c.top_left ? 0 : sk - sq) < sk - 1) return true;
    return false;
}

/// True when the window removes a key from some row of some sequence.
bool window_masks(const CaseSpec &c) {
    for (const auto &[sq, sk] : sequences(c)) {
        const int64_t first = c.top_left ? 0 : sk - sq, last = first + sq - 1;
        if ((c.window_left >= 0 && last - c.window_left > 0) || (c.window_right >= 0 && first + c.window_right < sk - 1)) return true;
    }
    return false;
}

/// True when some sequence's q_len, kv_len pair satisfies pred.
template <typename Pred>
bool any_sequence(const CaseSpec &c, Pred pred) {
    for (const auto &[sq, sk] : sequences(c))
        if (pred(sq, sk)) return true;
    return false;
}

/// True when some row of some batch has no key that the mask and the segment ids allow.
bool has_empty_row(const Suite &suite, const CaseSpec &c) {
    if (c.paged) return false;  // q_len <= kv_len: every query sees at least its own key position
    std::vector<int32_t> seg_q, seg_kv;
    if (c.segments_per_token || c.segments > 1) {
        CaseInputs in = generate_inputs(suite, c);
        seg_q = std::move(in.segment_ids_q), seg_kv = std::move(in.segment_ids_kv);
    }
    for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t i = 0; i < c.seq_q; ++i) {
            const int64_t p = position(c, i);
            int64_t lo = 0, hi = c.seq_k - 1;
            if (c.causal) hi = std::min(hi, p);
            if (c.window_left >= 0) lo = std::max(lo, p - c.window_left);
            if (c.window_right >= 0) hi = std::min(hi, p + c.window_right);
            bool any = false;
            for (int64_t j = std::max<int64_t>(lo, 0); j <= hi && !any; ++j)
                any = seg_q.empty() || seg_q[static_cast<size_t>(b * c.seq_q + i)] == seg_kv[static_cast<size_t>(b * c.seq_k + j)];
            if (!any) return true;
        }
    return false;
}

}  // namespace

const char *feature_name(Feature f) {
    switch (f) {
    case Feature::Causal: return "causal";
    case Feature::Window: return "window";
    case Feature::Segments: return "segments";
    case Feature::Bias: return "bias";
    case Feature::Softcap: return "softcap";
    case Feature::Gqa: return "gqa/mqa";
    case Feature::HeadDimV: return "dv!=d";
    case Feature::CrossLength: return "sq!=sk";
    case Feature::PartialBlock: return "sk%128";
    case Feature::Batch: return "batch>1";
    case Feature::F32: return "f32";
    case Feature::Bf16: return "bf16";
    case Feature::Nan: return "nan";
    case Feature::EmptyRows: return "empty_rows";
    case Feature::Paged: return "paged";
    case Feature::Ragged: return "ragged";
    case Feature::PartialPage: return "kv%page";
    }
    return "?";
}

const std::array<Feature, kFeatureCount> &all_features() {
    static const std::array<Feature, kFeatureCount> all = [] {
        std::array<Feature, kFeatureCount> a{};
        for (size_t i = 0; i < kFeatureCount; ++i) a[i] = static_cast<Feature>(i);
        return a;
    }();
    return all;
}

std::vector<Feature> case_features(const Suite &suite, const CaseSpec &c) {
    std::vector<Feature> f;
    if (causal_masks(c)) f.push_back(Feature::Causal);
    if (window_masks(c)) f.push_back(Feature::Window);
    if (c.segments_per_token ? c.seq_q > 1 : c.segments > 1) f.push_back(Feature::Segments);
    if (!c.bias_shape.empty()) f.push_back(Feature::Bias);
    if (c.softcap > 0) f.push_back(Feature::Softcap);
    if (c.heads_kv < c.heads_q) f.push_back(Feature::Gqa);
    if (c.head_dim_v != c.head_dim) f.push_back(Feature::HeadDimV);
    if (any_sequence(c, [](int64_t sq, int64_t sk) { return sq != sk; })) f.push_back(Feature::CrossLength);
    if (any_sequence(c, [](int64_t, int64_t sk) { return sk % kDefaultBlockK != 0; })) f.push_back(Feature::PartialBlock);
    if (c.batch > 1) f.push_back(Feature::Batch);
    f.push_back(c.dtype == ATTNGATE_DTYPE_BF16 ? Feature::Bf16 : Feature::F32);
    if (c.nan) f.push_back(Feature::Nan);
    if (has_empty_row(suite, c)) f.push_back(Feature::EmptyRows);
    if (c.paged) f.push_back(Feature::Paged);
    if (c.paged && c.paged->ragged()) f.push_back(Feature::Ragged);
    if (c.paged && any_sequence(c, [&](int64_t, int64_t sk) { return sk % c.paged->page_size != 0; })) f.push_back(Feature::PartialPage);
    return f;
}

const char *meaningless_pair(Feature a, Feature b) {
    const auto either = [&](Feature x, Feature y) { return (a == x && b == y) || (a == y && b == x); };
    if (either(Feature::F32, Feature::Bf16)) return "a case has one operand dtype";
    for (Feature paged : {Feature::Paged, Feature::Ragged, Feature::PartialPage}) {
        if (either(paged, Feature::Segments)) return "a paged case has no segment ids: each sequence is its own";
        if (either(paged, Feature::Bias)) return "a paged case has no bias";
        if (either(paged, Feature::EmptyRows)) return "a paged query always sees its own key position (q_len <= kv_len)";
    }
    return nullptr;
}

bool declares(uint32_t bits, Feature f) {
    const auto has = [&](uint32_t b) { return (bits & b) == b; };
    switch (f) {
    case Feature::Causal: return has(ATTNGATE_FEATURE_CAUSAL);
    case Feature::Window: return has(ATTNGATE_FEATURE_WINDOW);
    case Feature::Segments: return has(ATTNGATE_FEATURE_SEGMENT_IDS);
    case Feature::Bias: return has(ATTNGATE_FEATURE_BIAS);
    case Feature::Softcap: return has(ATTNGATE_FEATURE_SOFTCAP);
    case Feature::Gqa: return has(ATTNGATE_FEATURE_GQA);
    case Feature::HeadDimV: return has(ATTNGATE_FEATURE_HEAD_DIM_V);
    case Feature::F32: return has(ATTNGATE_FEATURE_F32);
    case Feature::Bf16: return has(ATTNGATE_FEATURE_BF16);
    case Feature::CrossLength:
    case Feature::PartialBlock:
    case Feature::Batch:
    case Feature::Nan: return true;
    case Feature::EmptyRows: return has(ATTNGATE_FEATURE_CAUSAL) || has(ATTNGATE_FEATURE_WINDOW);
    case Feature::Paged:
    case Feature::PartialPage: return has(ATTNGATE_FEATURE_PAGED_KV);
    case Feature::Ragged: return has(ATTNGATE_FEATURE_PAGED_KV | ATTNGATE_FEATURE_RAGGED);
    }
    return false;
}

const char *unreachable_pair(Feature a, Feature b, uint32_t bits) {
    const bool causal_paged = (a == Feature::Causal && (b == Feature::Paged || b == Feature::PartialPage)) ||
                              (b == Feature::Causal && (a == Feature::Paged || a == Feature::PartialPage));
    if (causal_paged && !declares(bits, Feature::Ragged))
        return "without ragged batches every paged query is a decode step's one row, whose causal mask masks no key";
    return nullptr;
}

bool required_pair(Feature a, Feature b, uint32_t bits) {
    return !meaningless_pair(a, b) && declares(bits, a) && declares(bits, b) && !unreachable_pair(a, b, bits);
}

int Coverage::meaningful_pairs() const {
    int n = 0;
    for (size_t a = 0; a < kFeatureCount; ++a)
        for (size_t b = a + 1; b < kFeatureCount; ++b) n += meaningless_pair(static_cast<Feature>(a), static_cast<Feature>(b)) == nullptr;
    return n;
}

int Coverage::required_pairs() const {
    int n = 0;
    for (size_t a = 0; a < kFeatureCount; ++a)
        for (size_t b = a + 1; b < kFeatureCount; ++b) n += required[a][b];
    return n;
}

std::vector<std::pair<Feature, Feature>> Coverage::missing_for_some_kernel() const {
    std::vector<std::pair<Feature, Feature>> out;
    for (const auto &k : kernels) out.insert(out.end(), k.missing.begin(), k.missing.end());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

namespace {

/// A kernel as coverage sees it: what it declares and the indexes of the cases it runs.
struct CoveredKernel {
    const KernelInfo *info = nullptr;  ///< null: every feature, every case
    std::vector<size_t> cases;
};

Coverage coverage_of(const Suite &suite, const std::vector<CoveredKernel> &kernels) {
    Coverage cov;
    for (const auto &c : suite.cases) {
        auto features = case_features(suite, c);
        for (Feature a : features)
            for (Feature b : features) ++cov.together[static_cast<size_t>(a)][static_cast<size_t>(b)];
        cov.cases.emplace_back(c.id, std::move(features));
    }
    std::array<std::array<bool, kFeatureCount>, kFeatureCount> met_by_one{};
    for (const auto &k : kernels) {
        KernelCoverage kc;
        kc.kernel = k.info ? k.info->name : "";
        kc.origin = k.info ? k.info->origin : "";
        kc.features = k.info ? k.info->features : uint32_t{ATTNGATE_FEATURE_ALL_PAGED};
        kc.cases = static_cast<int>(k.cases.size());
        std::array<std::array<bool, kFeatureCount>, kFeatureCount> met{};
        for (size_t i : k.cases)
            for (Feature a : cov.cases[i].second)
                for (Feature b : cov.cases[i].second) met[static_cast<size_t>(a)][static_cast<size_t>(b)] = true;
        for (size_t a = 0; a < kFeatureCount; ++a)
            for (size_t b = a + 1; b < kFeatureCount; ++b) {
                const auto fa = static_cast<Feature>(a), fb = static_cast<Feature>(b);
                if (!required_pair(fa, fb, kc.features)) continue;
                ++kc.required;
                cov.required[a][b] = true;
                if (met[a][b]) met_by_one[a][b] = true;
                else kc.missing.emplace_back(fa, fb);
            }
        cov.kernels.push_back(std::move(kc));
    }
    for (size_t a = 0; a < kFeatureCount; ++a)
        for (size_t b = a + 1; b < kFeatureCount; ++b)
            if (cov.required[a][b] && !met_by_one[a][b]) cov.missing.emplace_back(static_cast<Feature>(a), static_cast<Feature>(b));
    return cov;
}

}  // namespace

Coverage suite_coverage(const Suite &suite, const Plan &plan) {
    std::vector<CoveredKernel> kernels;  // one per kernel, however many labels the suite gives it
    const auto entry = [&](const KernelInfo *info) {
        return std::find_if(kernels.begin(), kernels.end(), [&](const CoveredKernel &k) { return k.info == info; });
    };
    for (const auto &k : plan.kernels)
        if (entry(k->info) == kernels.end()) kernels.push_back(CoveredKernel{k->info, {}});
    for (size_t i = 0; i < suite.cases.size(); ++i) {
        const CaseSpec &c = suite.cases[i];
        const auto planned = std::find_if(plan.cases.begin(), plan.cases.end(), [&](const PlannedCase &pc) { return pc.spec == &c; });
        if (planned == plan.cases.end()) continue;
        for (const PlannedKernel *k : planned->kernels) {
            auto &cases = entry(k->info)->cases;
            if (missing_features(*k->info, c).empty() && (cases.empty() || cases.back() != i)) cases.push_back(i);
        }
    }
    return coverage_of(suite, kernels);
}

Coverage suite_coverage(const Suite &suite) {
    CoveredKernel every;
    for (size_t i = 0; i < suite.cases.size(); ++i) every.cases.push_back(i);
    return coverage_of(suite, {every});
}

}  // namespace attngate
