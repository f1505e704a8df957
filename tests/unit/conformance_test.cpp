// The conformance check: every probe case tells its conventions apart, a wrong convention
// is named, declarations decide "declared" against "neither", and the built-in kernels conform.
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "attngate/bf16.hpp"
#include "backend/in_process_backend.hpp"
#include "checks/conformance.hpp"
#include "checks/convention_reference.hpp"
#include "io/json_io.hpp"
#include "report/conformance_report.hpp"
#include "run/conform.hpp"

using namespace attngate;

namespace {

constexpr uint32_t kAll = ATTNGATE_FEATURE_ALL;

const ProbeCase &find_case(const std::vector<ProbeCase> &cases, std::string_view id) {
    for (const auto &c : cases)
        if (c.id == id) return c;
    FAIL("no probe case " << id);
    return cases.front();
}

/// An observation whose output is one candidate's (as a kernel following it would give).
Observation output_of(const ProbeCase &pc, std::string_view candidate) {
    Observation o;
    for (const auto &c : pc.candidates)
        if (c.name == candidate) o.output.assign(c.output.begin(), c.output.end());
    REQUIRE(!o.output.empty());
    return o;
}

DeclaredConventions adapter_kernel() {
    DeclaredConventions d;
    d.declares = true;
    return d;
}

}  // namespace

TEST_CASE("every probe case tells its candidates apart by 10x its tolerance", "[conformance]") {
    for (const bool declares : {false, true}) {
        DeclaredConventions d;
        d.declares = declares;
        std::vector<SkippedProbe> skipped;
        const auto cases = probe_cases(kAll, d, &skipped);
        CHECK(skipped.empty());
        std::set<std::string> probes;
        for (const auto &pc : cases) {
            probes.insert(pc.probe);
            if (pc.nan_pattern) continue;  // judged by where NaN lands, checked below
            INFO(pc.probe << "/" << pc.id);
            CHECK(candidate_separation(pc) >= 10 * pc.tolerance);
            // Attngate's candidate is the fp64 oracle itself.
            if (pc.probe != "bf16_probabilities")
                CHECK(pc.candidates.front().output == variant_attention(pc.spec, pc.inputs));
        }
        CHECK(probes == std::set<std::string>{"causal_alignment", "scale", "bias_softcap", "gqa", "fully_masked_row", "masked_nan",
                                              "bf16_probabilities"});
    }
}

TEST_CASE("a wrong convention is named and fails; attngate's passes", "[conformance]") {
    const auto cases = probe_cases(kAll, adapter_kernel(), nullptr);
    const struct {
        const char *id, *wrong;
    } wrong[] = {{"bottom_right_q128_k256", "top_left"},       {"scale_0.3_d64", "scale_twice"},
                 {"softcap_2_bias", "bias_then_softcap"},       {"gqa_4q_2kv", "modulo"},
                 {"empty_rows_segment_ids", "mean_of_v"},      {"scale_then_bias", "bias_scaled"},
                 {"scale_then_softcap", "softcap_before_scale"}, {"top_left_q128_k256", "bottom_right"}};
    for (const auto &w : wrong) {
        INFO(w.id);
        const ProbeCase &pc = find_case(cases, w.id);
        const ProbeOutcome bad = judge_probe(pc, output_of(pc, w.wrong));
        CHECK(bad.follows == w.wrong);
        CHECK(bad.label == ProbeOutcome::Label::Neither);
        CHECK_FALSE(bad.pass);
        CHECK(bad.message.find("neither attngate's") != std::string::npos);
        const ProbeOutcome good = judge_probe(pc, output_of(pc, pc.attngate.front()));
        CHECK(good.label == ProbeOutcome::Label::Attngate);
        CHECK(good.pass);
    }
}

TEST_CASE("attngate's convention off by more than the tolerance is named a numeric error, not another convention", "[conformance]") {
    // From review: a kernel off by 2^-12 everywhere read "fits no known convention (closest: X);
    // attngate's is X", which named the same convention twice and did not say what was wrong.
    const auto cases = probe_cases(kAll, adapter_kernel(), nullptr);
    const ProbeCase &pc = find_case(cases, "scale_0.3_d64");
    Observation shifted = output_of(pc, pc.attngate.front());
    for (auto &x : shifted.output) x += static_cast<float>(3 * pc.tolerance);  // within the separation (10x), beyond the tolerance
    const ProbeOutcome r = judge_probe(pc, shifted);
    CHECK(r.label == ProbeOutcome::Label::Neither);
    CHECK_FALSE(r.pass);
    INFO(r.message);
    CHECK(r.message.find("closest to attngate's own convention") != std::string::npos);
    CHECK(r.message.find("this probe's tolerance: a numeric error, not another convention") != std::string::npos);
    CHECK(r.message.find("fits no known convention") == std::string::npos);
    // Far from every convention (x1.3 of attngate's output), or as near another, it is not called a numeric error.
    Observation scaled = output_of(pc, pc.attngate.front());
    for (auto &x : scaled.output) x *= 1.3f;
    const ProbeOutcome far = judge_probe(pc, scaled);
    CHECK(far.message.find("a numeric error") == std::string::npos);
    CHECK(far.message.find("fits no known convention (closest: ") != std::string::npos);
    Observation zeros = output_of(pc, pc.attngate.front());
    for (auto &x : zeros.output) x = 0.0f;
    CHECK(judge_probe(pc, zeros).message.find("a numeric error") == std::string::npos);
    // Closest to another convention, it still says none fits.
    Observation off = output_of(pc, "scale_twice");
    for (auto &x : off.output) x += static_cast<float>(3 * pc.tolerance);
    const ProbeOutcome other = judge_probe(pc, off);
    CHECK(other.message.find("fits no known convention (closest: ") != std::string::npos);
}

TEST_CASE("a declared convention passes as declared; a wrong declaration fails", "[conformance]") {
    DeclaredConventions d = adapter_kernel();
    d.causal_alignment = "top_left";
    d.fully_masked_row = "mean_of_v";
    const auto cases = probe_cases(kAll, d, nullptr);
    const ProbeCase &causal = find_case(cases, "bottom_right_q128_k256");
    const ProbeOutcome declared = judge_probe(causal, output_of(causal, "top_left"));
    CHECK(declared.label == ProbeOutcome::Label::Declared);
    CHECK(declared.pass);
    const ProbeCase &empty = find_case(cases, "empty_rows_segment_ids");
    CHECK(judge_probe(empty, output_of(empty, "mean_of_v")).label == ProbeOutcome::Label::Declared);
    // Declared the mean of V but outputs zeros: attngate's, yet the declaration is wrong.
    const ProbeOutcome zeros = judge_probe(empty, output_of(empty, "zeros"));
    CHECK(zeros.label == ProbeOutcome::Label::Attngate);
    CHECK_FALSE(zeros.pass);
    CHECK(zeros.message.find("fix the declaration") != std::string::npos);
}

TEST_CASE("bf16 probabilities: the rounding is named, and must match rounds_to_case_dtype", "[conformance]") {
    DeclaredConventions rounds = adapter_kernel();
    rounds.rounds_probabilities = true;
    const ProbeCase pc = find_case(probe_cases(ATTNGATE_FEATURE_BF16, rounds, nullptr), "bf16_cancelling_values");
    for (const char *form : {"exact", "rounded_normalized", "rounded_exp"}) {
        INFO(form);
        // The kernel's output is itself a bf16 array: round each candidate as a kernel would.
        Observation o = output_of(pc, form);
        for (float &x : o.output) x = round_to_bf16(x);
        CHECK(judge_probe(pc, o).follows == form);
    }
    CHECK(judge_probe(pc, output_of(pc, "rounded_exp")).pass);
    CHECK_FALSE(judge_probe(pc, output_of(pc, "exact")).pass);  // declares rounding it does not do
    const ProbeCase keeps = find_case(probe_cases(ATTNGATE_FEATURE_BF16, adapter_kernel(), nullptr), "bf16_cancelling_values");
    CHECK_FALSE(judge_probe(keeps, output_of(keeps, "rounded_normalized")).pass);  // rounds without declaring it
    CHECK(judge_probe(keeps, output_of(keeps, "exact")).label == ProbeOutcome::Label::Declared);
}

TEST_CASE("a NaN at a masked key: ignored or leaking, by where NaN lands", "[conformance]") {
    DeclaredConventions d = adapter_kernel();
    d.v_nan_leaks = true;
    const auto cases = probe_cases(kAll, d, nullptr);
    const ProbeCase &v = find_case(cases, "nan_in_v_at_key_100_causal");
    Observation o = output_of(v, "ignored");
    CHECK(judge_probe(v, o).label == ProbeOutcome::Label::Attngate);
    CHECK_FALSE(judge_probe(v, o).pass);  // declared leaking, but it does not
    for (int64_t i = 0; i < 100; ++i) o.output[static_cast<size_t>(i * 32 + 3)] = NAN;  // rows that mask key 100
    const ProbeOutcome leaks = judge_probe(v, o);
    CHECK(leaks.follows == "leaks");
    CHECK(leaks.label == ProbeOutcome::Label::Declared);
    CHECK(leaks.message.find("100 of them in rows that mask key 100") != std::string::npos);
    const ProbeCase &k = find_case(cases, "nan_in_k_at_key_100_causal");
    Observation k_leaks = output_of(k, "ignored");
    for (int64_t i = 0; i < 32 * 100; ++i) k_leaks.output[static_cast<size_t>(i)] = NAN;  // whole rows that mask key 100
    const ProbeOutcome kl = judge_probe(k, k_leaks);
    CHECK(kl.follows == "leaks");
    CHECK(kl.label == ProbeOutcome::Label::Neither);  // declared: k ignored
    CHECK_FALSE(kl.pass);
}

TEST_CASE("declarations are read from the protocol's conventions, and a bad one names the kernel", "[conformance]") {
    KernelInfo k;
    k.name = "team";
    k.origin = "adapter x";
    CHECK_FALSE(declared_conventions(k)->declares);
    k.conventions = {{"causal_alignment", "top_left"}, {"fully_masked_row", "mean_of_v"}, {"masked_nan_leaks", {"v"}}};
    const auto d = declared_conventions(k);
    REQUIRE(d);
    CHECK(d->declares);
    CHECK(d->causal_alignment == "top_left");
    CHECK(d->v_nan_leaks);
    CHECK_FALSE(d->k_nan_leaks);
    k.conventions["causal_alignment"] = boost::json::array{"top_left"};
    const auto bad = declared_conventions(k);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("team (adapter x): conventions.causal_alignment") != std::string::npos);
}

TEST_CASE("a kernel's refusal is 'declined', a kernel error is an error", "[conformance]") {
    const auto cases = probe_cases(kAll, {}, nullptr);
    Observation declined;
    declined.unsupported = "no soft-cap";
    CHECK(judge_probe(cases.front(), declined).label == ProbeOutcome::Label::Declined);
    CHECK(judge_probe(cases.front(), declined).pass);
    Observation error;
    error.kernel_rc = 1;
    error.kernel_error = "boom";
    CHECK(judge_probe(cases.front(), error).label == ProbeOutcome::Label::Error);
    CHECK_FALSE(judge_probe(cases.front(), error).pass);
}

TEST_CASE("the built-in kernels conform", "[conformance][kernels]") {
    auto in_process = InProcessBackend::create({});
    REQUIRE(in_process);
    Backends backends;
    REQUIRE(backends.add(std::move(*in_process)));
    ConformOptions opt;
    opt.isolation = false;
    const auto report = run_conformance(backends, opt);
    REQUIRE(report);
    REQUIRE(report->kernels.size() == 4);
    for (const auto &k : report->kernels) {
        INFO(k.kernel);
        CHECK(k.error.empty());
        // Every probe applies to the built-ins with every feature; flash-decode takes no bias,
        // so the bias/soft-cap order probe (two cases) is not run on it, and says so.
        const bool no_bias = k.kernel == "flash-decode";
        CHECK(k.outcomes.size() == (no_bias ? 9u : 11u));
        CHECK(k.skipped.size() == (no_bias ? 1u : 0u));
        for (const auto &o : k.outcomes) {
            INFO(o.probe << "/" << o.case_id << ": " << o.message);
            CHECK(o.pass);
            CHECK((o.label == ProbeOutcome::Label::Attngate || (o.probe == "bf16_probabilities" && o.follows == "exact")));
        }
    }
}

TEST_CASE("the report names the failing probe and keeps every distance in JSON", "[conformance]") {
    const auto cases = probe_cases(kAll, {}, nullptr);
    const ProbeCase &gqa = find_case(cases, "gqa_4q_2kv");
    ConformanceReport report;
    report.kernels.push_back({"team", "adapter x", {judge_probe(gqa, output_of(gqa, "modulo")), judge_probe(gqa, output_of(gqa, "grouped"))},
                              {{"bias_softcap", "needs the bias and softcap features"}}, ""});
    report.load_errors = {"adapter x: --kernels broken:make: cannot import broken"};
    const std::string text = conformance_console(report);
    CHECK(text.find("team (adapter x): DOES NOT CONFORM (2 probe cases: 1 attngate, 1 neither)") != std::string::npos);
    CHECK(text.find("FAIL gqa") != std::string::npos);
    CHECK(text.find("ok   gqa") == std::string::npos);  // passing lines were the progress lines
    CHECK(text.find("not probed: needs the bias and softcap features") != std::string::npos);
    CHECK(text.find("load error: adapter x: --kernels broken:make") != std::string::npos);
    const auto j = conformance_json(report);
    CHECK_FALSE(j.at("pass").as_bool());
    const auto &probe = j.at("kernels").at(0).at("probes").at(0).as_object();
    CHECK(probe.at("follows") == "modulo");
    CHECK(probe.at("label") == "neither");
    CHECK(probe.at("distances").as_array().size() == 2);
    // What --json writes is known as conform's own by its head, so a rerun may replace it.
    const std::string file = pretty_json(j);
    CHECK(file.starts_with(kConformanceJsonMark.start));
    CHECK(file.substr(0, kOutputMarkBytes).find(kConformanceJsonMark.mark) != std::string::npos);
}
