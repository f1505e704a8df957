// Making goldens: each case's fp64 reference output, calibrated by the straightforward
// implementation's error, written to the store with its manifest.
#include "run/golden_generate.hpp"

#include <algorithm>
#include <cmath>

#include "attngate/builtin_kernels.hpp"
#include "backend/memory.hpp"
#include "io/files.hpp"
#include "io/npy.hpp"
#include "io/rng.hpp"
#include "plan/inputs.hpp"
#include "store/keys.hpp"

namespace attngate {

void calibrate_golden(GoldenEntry &e, std::span<const double> golden, std::span<const float> straightforward) {
    ATTNGATE_CHECK(golden.size() == straightforward.size());
    double max_err = 0.0, sum_sq = 0.0, max_out = 0.0;
    int64_t finite = 0;
    for (size_t i = 0; i < golden.size(); ++i) {
        if (!std::isfinite(golden[i])) continue;
        max_out = std::max(max_out, std::fabs(golden[i]));
        if (!std::isfinite(straightforward[i])) continue;
        const double d = std::fabs(static_cast<double>(straightforward[i]) - golden[i]);
        max_err = std::max(max_err, d);
        sum_sq += d * d;
        ++finite;
    }
    e.output_max_abs = max_out;
    e.straightforward_max_abs_error = max_err;
    e.straightforward_rms_error = finite ? std::sqrt(sum_sq / static_cast<double>(finite)) : 0.0;
}

Result<GoldenManifest> generate_goldens(const Suite &suite, Store &store, const std::function<void(const GoldenEntry &)> &progress,
                                        const json::object *fingerprint) {
    // The suite's own folder first: a name that cannot be one (a "..") is bad input naming it, before anything is written aside.
    if (auto target = golden_key(suite.name, "manifest.json"); !target) return std::unexpected(target.error());
    GoldenStaging staging(suite, store);
    GoldenManifest m;
    m.suite = suite.name;
    m.generator_version = kGeneratorVersion;
    m.reference_version = "reference 1.1.0";
    for (const auto &c : suite.cases) {
        const CaseInputs in = generate_inputs(suite, c);
        CountingAllocator alloc;
        std::vector<double> golden(static_cast<size_t>(output_elements(c)));
        std::vector<float> plain(golden.size());
        const attngate_problem p = make_problem(c, in, plain.data(), alloc.abi());
        char err[256] = {0};
        if (kernels::reference_forward_f64(p, golden.data(), err, sizeof err) != 0)
            return fail(ErrorKind::Infra, "case {}: reference kernel failed: {}", c.id, err);
        if (kernels::straightforward_forward(p, err, sizeof err) != 0)
            return fail(ErrorKind::Infra, "case {}: straightforward kernel failed: {}", c.id, err);
        // A scale of 1e300 made every golden element NaN, and every kernel then passed a case
        // that tests nothing: an output without one finite non-zero element is a bad case.
        if (std::none_of(golden.begin(), golden.end(), [](double x) { return std::isfinite(x) && x != 0.0; }))
            return fail(ErrorKind::BadInput, "{}: case {}: the reference output is all NaN, infinite or zero (scale, softcap or "
                        "amplitudes out of range?), so the case would test nothing", suite.file.string(), c.id);

        GoldenEntry e;
        e.case_id = c.id;
        e.file = c.id + ".npy";
        e.shape = output_shape(c);
        e.case_dtype = dtype_name(c.dtype);
        const std::string bytes = serialize_npy(make_npy(std::span<const double>(golden), e.shape));
        e.sha256 = sha256_hex(bytes);
        e.inputs_sha256 = in.sha256();
        e.rules_sha256 = c.rules_sha256();
        calibrate_golden(e, golden, plain);
        if (auto w = staging.save_golden(e, bytes); !w) return std::unexpected(w.error());
        if (progress) progress(e);
        m.cases.push_back(std::move(e));
    }
    if (auto w = staging.save_manifest(m); !w) return std::unexpected(w.error());
    if (fingerprint)
        if (auto w = staging.save_fingerprint(*fingerprint); !w) return std::unexpected(w.error());
    if (auto w = staging.commit(); !w) return std::unexpected(w.error());
    return m;
}

}  // namespace attngate
