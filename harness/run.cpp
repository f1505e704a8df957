// Running a suite: goldens verified first, then every case x kernel.
#include "run.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>

#include "checks/golden_check.hpp"
#include "files.hpp"
#include "fingerprint.hpp"
#include "golden.hpp"
#include "inputs.hpp"
#include "memory.hpp"

namespace attngate {

const char *tool_version() { return "attngate 0.1.0"; }

const std::vector<std::string> &known_checks() {
    static const std::vector<std::string> checks = {"golden"};
    return checks;
}

json::object case_params(const CaseSpec &c) {
    json::object o{{"batch", c.batch},     {"seq_q", c.seq_q},       {"seq_k", c.seq_k},
                   {"heads_q", c.heads_q}, {"heads_kv", c.heads_kv}, {"head_dim", c.head_dim},
                   {"head_dim_v", c.head_dim_v}, {"dtype", dtype_name(c.dtype)}, {"causal", c.causal},
                   {"window", json::array{c.window_left, c.window_right}}, {"softcap", c.softcap},
                   {"scale", c.effective_scale()}};
    if (c.segments_per_token) o["segments"] = "per_token";
    else if (c.segments) o["segments"] = c.segments;
    if (!c.bias_shape.empty()) o["bias"] = json::array(c.bias_shape.begin(), c.bias_shape.end());
    if (c.nan) o["nan_in"] = c.nan->tensor;
    return o;
}

namespace {

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

/// Runs one kernel on one case and returns its output (or a failed check).
CaseResult run_one(const CaseSpec &c, const PlannedKernel &k, const CaseInputs &in, const GoldenEntry &golden,
                   const std::vector<double> &want, const RunResults *previous) {
    CaseResult r;
    r.case_id = c.id;
    r.kernel = k.spec->label();
    r.kernel_version = k.kernel->version ? k.kernel->version : "";
    r.params = case_params(c);

    std::vector<float> out(static_cast<size_t>(output_elements(c)), 0.0f);
    CountingAllocator alloc;
    const attngate_problem p = make_problem(c, in, out.data(), alloc.abi(), k.spec->block_q, k.spec->block_k);
    if (const std::string why = unsupported_reason(*k.kernel, c, p); !why.empty()) {
        r.checks.push_back(CheckResult{"golden", Verdict::Skip, why, {}, {}});
        return r;
    }
    char err[512] = {0};
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = k.kernel->run(k.kernel, &p, err, sizeof err);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
        r.checks.push_back(CheckResult{"golden", Verdict::Fail, fmt::format("kernel returned error {}: {}", rc, err), {}, {}});
        return r;
    }
    r.output_sha256 = sha256_hex(std::string_view(reinterpret_cast<const char *>(out.data()), out.size() * sizeof(float)));
    CheckResult g = golden_check(out, want, golden, c.dtype);
    if (previous) {
        if (const CaseResult *last = previous->find(c.id, r.kernel); last && !last->output_sha256.empty())
            g.notes.push_back(last->output_sha256 == r.output_sha256 ? "output bit-identical to the last run"
                                                                      : "output differs in its bits from the last run");
    }
    r.checks.push_back(std::move(g));
    return r;
}

}  // namespace

Result<RunResults> run_suite(const Suite &suite, const KernelRegistry &registry, const RunOptions &options,
                             const ProgressFn &progress) {
    for (const auto &c : options.checks)
        if (std::find(known_checks().begin(), known_checks().end(), c) == known_checks().end())
            return fail(ErrorKind::Usage, "--checks: unknown check \"{}\" (known: golden)", c);
    auto plan = make_plan(suite, registry, options.filter);
    if (!plan) return std::unexpected(plan.error());
    auto fingerprint = collect_fingerprint(registry, options.lockfiles);
    if (!fingerprint) return std::unexpected(fingerprint.error());

    // Every golden is verified before anything runs or is written: a corrupt or stale
    // golden is bad input (exit 2), never drift.
    auto manifest = load_golden_manifest(suite, options.baselines);
    if (!manifest) return std::unexpected(manifest.error());
    for (const auto &pc : *plan)
        if (auto g = load_golden(suite, options.baselines, *manifest->find(pc.spec->id)); !g) return std::unexpected(g.error());

    std::optional<RunResults> previous;
    if (std::filesystem::exists(options.results_path))
        if (auto prev = load_results(options.results_path); prev && prev->suite == suite.name) previous = std::move(*prev);

    RunResults results;
    results.tool_version = tool_version();
    results.suite = suite.name;
    results.suite_file = suite.file.string();
    results.started_at = utc_now();
    results.checks = options.checks;
    results.fingerprint = std::move(*fingerprint);
    if (const auto fp = baseline_fingerprint_path(golden_dir(options.baselines, suite)); std::filesystem::exists(fp)) {
        auto base = load_fingerprint(fp);
        if (!base) return std::unexpected(base.error());
        results.baseline_fingerprint = std::move(*base);
    }
    size_t total = 0, done = 0;
    for (const auto &pc : *plan) total += pc.kernels.size();

    for (const auto &pc : *plan) {
        const CaseSpec &c = *pc.spec;
        const GoldenEntry &entry = *manifest->find(c.id);
        auto want = load_golden(suite, options.baselines, entry);
        if (!want) return std::unexpected(want.error());
        const CaseInputs in = generate_inputs(suite, c);
        for (const auto &k : pc.kernels) {
            results.results.push_back(run_one(c, k, in, entry, *want, previous ? &*previous : nullptr));
            if (progress) progress(results.results.back(), ++done, total);
        }
        if (auto w = save_results(results, options.results_path); !w) return std::unexpected(w.error());
    }
    results.complete = true;
    if (auto w = save_results(results, options.results_path); !w) return std::unexpected(w.error());
    return results;
}

}  // namespace attngate
