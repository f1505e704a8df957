// The conformance check's verdicts: declarations read, outputs judged against candidates.
#include "checks/conformance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/json_io.hpp"

namespace attngate {

namespace {

bool contains(const std::vector<std::string> &v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

Result<std::string> one_of(const KernelInfo &k, std::string_view key, std::initializer_list<std::string_view> allowed,
                           std::string fallback) {
    const auto *v = k.conventions.if_contains(key);
    if (!v) return fallback;
    if (v->is_string() && std::find(allowed.begin(), allowed.end(), std::string_view(v->get_string())) != allowed.end())
        return std::string(v->get_string());
    return fail(ErrorKind::BadInput, "kernel {} ({}): conventions.{}: expected one of {}, got {}", k.name, k.origin, key,
                fmt::join(allowed, ", "), json::serialize(*v));
}

const Candidate *find_candidate(const ProbeCase &pc, std::string_view name) {
    for (const auto &c : pc.candidates)
        if (c.name == name) return &c;
    return nullptr;
}

std::string describe(const ProbeCase &pc, std::string_view name) {
    const Candidate *c = find_candidate(pc, name);
    return c ? c->description : std::string(name);
}

std::string distances_text(const std::vector<CandidateDistance> &ds) {
    std::string s;
    for (const auto &d : ds) {
        s += fmt::format("{}{} {}", s.empty() ? "" : ", ", d.name, d.nan_mismatch ? fmt::format("{} NaN differ", d.nan_mismatch)
                                                                                 : fmt::format("{:.3g}", d.max_error));
    }
    return s;
}

CandidateDistance distance(const ProbeCase &pc, const Candidate &c, std::span<const float> out, double global_scale) {
    CandidateDistance d;
    d.name = c.name;
    for (size_t i = 0; i < out.size(); ++i) {
        const bool a = std::isnan(out[i]), b = std::isnan(c.output[i]);
        if (a != b) ++d.nan_mismatch;
        if (a || b || !std::isfinite(out[i])) continue;
        const double scale = pc.scale.empty() ? global_scale : pc.scale[i];
        d.max_error = std::max(d.max_error, std::abs(out[i] - c.output[i]) / scale);
    }
    d.fits = d.nan_mismatch == 0 && d.max_error <= pc.tolerance;
    return d;
}

double attngate_scale(const ProbeCase &pc) {
    const Candidate *c = find_candidate(pc, pc.attngate.front());
    double m = 0;
    for (double x : c->output)
        if (std::isfinite(x)) m = std::max(m, std::abs(x));
    return m > 0 ? m : 1.0;
}

/// The masked-NaN probe: "ignored" (attngate's) when NaN lands exactly where the oracle has
/// it, "leaks" when it also reaches rows that mask the key.
void judge_nan_pattern(const ProbeCase &pc, std::span<const float> out, ProbeOutcome &r) {
    const Candidate &ignored = pc.candidates.front();
    int64_t extra = 0, missing = 0, want = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const bool a = std::isnan(out[i]), b = std::isnan(ignored.output[i]);
        want += b;
        extra += a && !b;
        missing += b && !a;
    }
    CandidateDistance d = distance(pc, ignored, out, attngate_scale(pc));
    r.distances = {d, CandidateDistance{"leaks", 0.0, missing, extra > 0 && missing == 0}};
    if (d.fits) r.follows = "ignored";
    else if (extra > 0 && missing == 0) r.follows = "leaks";
    else r.closest = "ignored";
    r.message = fmt::format("NaN in {} output elements (attngate: {}), {} of them in rows that mask key {}{}", want + extra - missing,
                            want, extra, pc.masked_key, missing ? fmt::format("; {} NaN of attngate's missing", missing) : "");
}

void judge_distances(const ProbeCase &pc, std::span<const float> out, ProbeOutcome &r) {
    const double scale = attngate_scale(pc);
    for (const auto &c : pc.candidates) r.distances.push_back(distance(pc, c, out, scale));
    const CandidateDistance *best = nullptr, *near = nullptr;
    for (const auto &d : r.distances) {
        if (d.fits && (!best || d.max_error < best->max_error)) best = &d;
        if (!near || std::pair(d.nan_mismatch, d.max_error) < std::pair(near->nan_mismatch, near->max_error)) near = &d;
    }
    if (best) r.follows = best->name;
    else r.closest = near->name;
    r.message = fmt::format("max error ÷ scale per convention: {} (fits within {:.2g})", distances_text(r.distances), pc.tolerance);
}

/// attngate's candidate when the output fits none but is plainly attngate's off by a numeric
/// error: nearest to it, without NaN differences, within a third of the way to any other
/// candidate, and closer than the probe's separation (every candidate pair is at least 10x
/// the tolerance apart). Else null: a far or ambiguous output is not called a numeric error.
const CandidateDistance *numeric_error_of_attngates(const ProbeCase &pc, const ProbeOutcome &r) {
    if (!r.follows.empty() || std::find(pc.attngate.begin(), pc.attngate.end(), r.closest) == pc.attngate.end()) return nullptr;
    const CandidateDistance *mine = nullptr;
    double others = std::numeric_limits<double>::infinity();
    for (const auto &d : r.distances)
        if (d.name == r.closest) mine = &d;
        else others = std::min(others, d.max_error);
    if (!mine || mine->nan_mismatch != 0 || mine->max_error >= 10 * pc.tolerance || 3 * mine->max_error >= others) return nullptr;
    return mine;
}

std::string verdict_text(const ProbeCase &pc, const ProbeOutcome &r) {
    const std::string declared = fmt::format("{}", fmt::join(pc.declared, " or "));
    switch (r.label) {
    case ProbeOutcome::Label::Attngate:
        if (r.pass) return fmt::format("follows {} (attngate's)", describe(pc, r.follows));
        return fmt::format("follows {} (attngate's), but declares {}: fix the declaration", describe(pc, r.follows), declared);
    case ProbeOutcome::Label::Declared:
        return fmt::format("follows {}, as declared (attngate's is {}); the adapter declines or allows for it",
                           describe(pc, r.follows), describe(pc, pc.attngate.front()));
    default: break;
    }
    if (const CandidateDistance *d = numeric_error_of_attngates(pc, r))
        return fmt::format("closest to attngate's own convention ({}), but {:.3g}x this probe's tolerance: a numeric error, not another "
                           "convention (the golden check judges its size)",
                           describe(pc, r.closest), d->max_error / pc.tolerance);
    if (r.follows.empty())
        return fmt::format("fits no known convention (closest: {}); attngate's is {}", describe(pc, r.closest), describe(pc, pc.attngate.front()));
    return fmt::format("follows {}: neither attngate's ({}) nor the declared ({})", describe(pc, r.follows),
                       describe(pc, pc.attngate.front()), declared);
}

}  // namespace

Result<DeclaredConventions> declared_conventions(const KernelInfo &k) {
    DeclaredConventions d;
    d.declares = !k.conventions.empty() || k.rounding.any();
    auto align = one_of(k, "causal_alignment", {"case", "top_left", "bottom_right"}, "case");
    if (!align) return std::unexpected(align.error());
    auto empty = one_of(k, "fully_masked_row", {"zeros", "mean_of_v", "nan"}, "zeros");
    if (!empty) return std::unexpected(empty.error());
    d.causal_alignment = *align;
    d.fully_masked_row = *empty;
    if (const auto *v = k.conventions.if_contains("masked_nan_leaks")) {
        if (!v->is_array()) return fail(ErrorKind::BadInput, "kernel {} ({}): conventions.masked_nan_leaks: expected a list of \"k\", \"v\"", k.name, k.origin);
        for (const auto &x : v->get_array()) {
            if (x == "k") d.k_nan_leaks = true;
            else if (x == "v") d.v_nan_leaks = true;
            else return fail(ErrorKind::BadInput, "kernel {} ({}): conventions.masked_nan_leaks: expected \"k\" or \"v\", got {}", k.name, k.origin, json::serialize(x));
        }
    }
    d.rounds_probabilities = k.rounding.probabilities;
    return d;
}

ProbeOutcome judge_probe(const ProbeCase &pc, const Observation &o) {
    ProbeOutcome r;
    r.probe = pc.probe;
    r.case_id = pc.id;
    if (o.crash || o.kernel_rc != 0 || !o.host_error.empty()) {
        r.label = ProbeOutcome::Label::Error;
        r.message = o.crash ? o.crash->describe() : !o.kernel_error.empty() ? o.kernel_error : o.host_error;
        return r;
    }
    if (!o.unsupported.empty()) {
        r.label = ProbeOutcome::Label::Declined;
        r.pass = true;
        r.message = "declined: " + o.unsupported;
        return r;
    }
    if (o.output.size() != pc.candidates.front().output.size()) {
        r.label = ProbeOutcome::Label::Error;
        r.message = fmt::format("output has {} elements, expected {}", o.output.size(), pc.candidates.front().output.size());
        return r;
    }
    if (pc.nan_pattern) judge_nan_pattern(pc, o.output, r);
    else judge_distances(pc, o.output, r);
    if (contains(pc.attngate, r.follows)) r.label = ProbeOutcome::Label::Attngate;
    else if (contains(pc.declared, r.follows)) r.label = ProbeOutcome::Label::Declared;
    else r.label = ProbeOutcome::Label::Neither;
    r.pass = contains(pc.declared, r.follows);
    r.message = verdict_text(pc, r) + ". " + r.message;
    return r;
}

double candidate_separation(const ProbeCase &pc) {
    double sep = INFINITY;
    const double global = attngate_scale(pc);
    for (size_t a = 0; a < pc.candidates.size(); ++a)
        for (size_t b = a + 1; b < pc.candidates.size(); ++b) {
            const auto &x = pc.candidates[a].output, &y = pc.candidates[b].output;
            if (x.empty() || y.empty()) continue;
            double m = 0;
            int64_t nan_differ = 0;
            for (size_t i = 0; i < x.size(); ++i) {
                if (std::isnan(x[i]) != std::isnan(y[i])) ++nan_differ;
                else if (std::isfinite(x[i]) && std::isfinite(y[i]))
                    m = std::max(m, std::abs(x[i] - y[i]) / (pc.scale.empty() ? global : pc.scale[i]));
            }
            sep = std::min(sep, nan_differ ? INFINITY : m);
        }
    return sep;
}

}  // namespace attngate
