// results.json serialisation.
#include "results/results.hpp"

#include <utility>

#include "io/files.hpp"

namespace attngate {

namespace {
template <size_t... I>
constexpr bool alternatives_follow_check_names(std::index_sequence<I...>) {
    return ((std::variant_alternative_t<I, CheckMetrics>::kCheck == static_cast<CheckName>(I)) && ...);
}
static_assert(alternatives_follow_check_names(std::make_index_sequence<std::variant_size_v<CheckMetrics>>()));
static_assert(std::variant_size_v<CheckMetrics> == enum_names(CheckName{}).size());

template <size_t... I>
CheckMetrics empty_metrics_at(size_t index, std::index_sequence<I...>) {
    CheckMetrics out;
    static_cast<void>(((index == I ? (out.emplace<I>(), true) : false) || ...));  // stops at the match
    return out;
}
}  // namespace

CheckMetrics empty_metrics(CheckName check) {
    return empty_metrics_at(static_cast<size_t>(check), std::make_index_sequence<std::variant_size_v<CheckMetrics>>());
}

json::object metrics_json(const CheckResult &c) {
    json::object m;
    if (c.crash) m.emplace("crash", to_json_object(*c.crash));
    std::visit([&](const auto &typed) {
        for (auto &kv : to_json_object(typed)) m.emplace(kv.key(), std::move(kv.value()));
    }, c.metrics);
    for (const auto &kv : c.extras) m.emplace(kv.key(), kv.value());  // a field of the record wins over a namesake extra
    return m;
}

const char *verdict_name(Verdict v) { return enum_name(v); }

std::optional<Verdict> parse_verdict(std::string_view s) { return parse_enum<Verdict>(s); }

Verdict CaseResult::verdict() const {
    bool all_skip = !checks.empty(), failed = false;
    for (const auto &c : checks) {
        if (c.verdict == Verdict::Error) return Verdict::Error;
        failed |= c.verdict == Verdict::Fail;
        if (c.verdict != Verdict::Skip) all_skip = false;
    }
    return failed ? Verdict::Fail : all_skip ? Verdict::Skip : Verdict::Pass;
}

std::string CaseResult::reason() const {
    for (Verdict v : {Verdict::Error, Verdict::Fail})
        for (const auto &c : checks)
            if (c.verdict == v) return std::string(c.name()) + ": " + c.reason;
    return checks.empty() ? "" : checks.front().reason;
}

Verdict RunResults::verdict() const {
    if (!load_errors.empty() || !complete) return Verdict::Fail;  // a run that did not finish is never green
    for (const auto &r : results)
        if (is_failing(r.verdict())) return Verdict::Fail;
    for (const auto &w : workloads)  // the cost gate fails per workload
        if (w.failed()) return Verdict::Fail;
    return Verdict::Pass;
}

const CaseResult *RunResults::find(std::string_view case_id, std::string_view kernel) const {
    for (const auto &r : results)
        if (r.case_id == case_id && r.kernel == kernel) return &r;
    return nullptr;
}

json::value to_json(const RunResults &r) {
    json::array results;
    int64_t counts[4] = {0, 0, 0, 0};  // indexed by Verdict
    for (const auto &c : r.results) {
        json::array checks;
        for (const auto &k : c.checks) {
            json::array notes(k.notes.begin(), k.notes.end());
            checks.push_back(json::object{{"check", k.name()}, {"verdict", verdict_name(k.verdict)}, {"reason", k.reason},
                                          {"metrics", metrics_json(k)}, {"notes", notes}});
        }
        ++counts[static_cast<int>(c.verdict())];
        results.push_back(json::object{{"case", c.case_id},
                                       {"kernel", c.kernel},
                                       {"kernel_version", c.kernel_version},
                                       {"kernel_origin", c.kernel_origin},
                                       {"verdict", verdict_name(c.verdict())},
                                       {"reason", c.reason()},
                                       {"params", c.params},
                                       {"output_sha256", c.output_sha256},
                                       {"seconds", c.seconds},
                                       {"compile_s", c.compile_s ? json::value(*c.compile_s) : json::value(nullptr)},
                                       {"checks", checks}});
    }
    json::object out{{"schema_version", r.schema_version},
                        {"tool", r.tool_version},
                        {"suite", r.suite},
                        {"suite_file", r.suite_file},
                        {"started_at", r.started_at},
                        {"complete", r.complete},
                        {"checks", described::to_value(r.checks)},
                        {"verdict", verdict_name(r.verdict())},
                        {"summary", json::object{{"pass", counts[0]}, {"fail", counts[1]}, {"skip", counts[2]}, {"error", counts[3]}}},
                        {"fingerprint", r.fingerprint},
                        {"baseline_fingerprint", r.baseline_fingerprint},
                        {"workloads", described::to_value(r.workloads)},
                        {"results", results}};
    if (!r.machine_class.empty()) out["machine_class"] = r.machine_class;
    if (!r.numerics_class.empty()) out["numerics_class"] = r.numerics_class;
    if (!r.shard.empty()) out["shard"] = r.shard;
    if (!r.ab.empty()) out["ab"] = r.ab;
    if (!r.host_name.empty()) out["host_name"] = r.host_name;
    if (!r.load_errors.empty()) out["load_errors"] = described::to_value(r.load_errors);
    return out;
}

namespace {

/// Version 1 had no "error" verdict: its crashes, hangs and kernel errors were "fail".
/// They are recognised by what version 1 wrote with them, so old runs report alike.
bool version1_error(const CheckResult &k) {
    return k.verdict == Verdict::Fail && (k.crash || k.reason.starts_with("kernel returned error"));
}

/// A check's metrics object: its crash, the fields of its record, and the rest as extras.
std::optional<Error> metrics_from_json(const json::object &m, const std::string &file, const std::string &path, CheckResult &k) {
    json::object rest;
    if (auto e = std::visit([&](auto &typed) { return from_json_object(m, typed, file, path, &rest); }, k.metrics)) return e;
    if (const auto *crash = rest.if_contains("crash")) {
        CrashRecord c;
        if (auto e = described::from_value(*crash, c, file, path + ".crash", true)) return e;
        k.crash = std::move(c);
        rest.erase("crash");
    }
    k.extras = std::move(rest);
    return std::nullopt;
}

std::optional<Error> check_from_json(const json::value &v, const std::string &file, const std::string &path, int schema_version,
                                     std::optional<CheckResult> &out) {
    ObjectReader r(v, file, path);
    const std::string name = r.required_string("check");
    const auto check = parse_enum<CheckName>(name);
    if (r.ok() && !check) {
        std::string names;
        for (const auto &[c, n] : enum_names(CheckName{})) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", n);
        r.fail_at("check", fmt::format("expected one of {}, got \"{}\"", names, name));
    }
    CheckResult k(check.value_or(CheckName::Golden));
    const std::string verdict = r.required_string("verdict");
    const auto parsed = parse_verdict(verdict);
    if (r.ok() && (!parsed || (schema_version < 2 && *parsed == Verdict::Error)))
        r.fail_at("verdict", schema_version < 2 ? "expected \"pass\", \"fail\" or \"skip\" (schema_version 1)"
                                                : "expected \"pass\", \"fail\", \"skip\" or \"error\"");
    if (r.ok()) k.verdict = *parsed;
    k.reason = r.string("reason", "");
    if (const auto *m = r.raw("metrics"); m && r.ok()) {
        if (!m->is_object()) r.fail_at("metrics", "expected an object");
        else r.adopt(metrics_from_json(m->get_object(), file, r.path_of("metrics"), k));
    }
    if (const auto *n = r.raw("notes"); n && n->is_array())
        for (const auto &e : n->get_array())
            if (e.is_string()) k.notes.emplace_back(e.get_string());
    if (r.ok() && schema_version < 2 && version1_error(k)) k.verdict = Verdict::Error;
    if (auto e = r.finish()) return e;
    out = std::move(k);
    return std::nullopt;
}

std::optional<Error> case_from_json(const json::value &v, const std::string &file, const std::string &path, int schema_version,
                                    CaseResult &c) {
    ObjectReader r(v, file, path);
    c.case_id = r.required_string("case");
    c.kernel = r.required_string("kernel");
    c.kernel_version = r.string("kernel_version", "");
    c.kernel_origin = r.string("kernel_origin", "");
    r.string("verdict", "");
    r.string("reason", "");
    if (const auto *p = r.raw("params"); p && p->is_object()) c.params = p->get_object();
    c.output_sha256 = r.string("output_sha256", "");
    c.seconds = r.number("seconds", 0.0);
    if (const auto *v = r.raw("compile_s"); v && v->is_number()) c.compile_s = v->to_number<double>();
    const json::value *checks = r.raw("checks");
    if (r.ok() && (!checks || !checks->is_array())) r.fail_at("checks", "expected an array");
    if (auto e = r.finish()) return e;
    for (size_t i = 0; i < checks->get_array().size(); ++i) {
        std::optional<CheckResult> k;
        if (auto e = check_from_json(checks->get_array()[i], file, fmt::format("{}.checks[{}]", path, i), schema_version, k)) return e;
        c.checks.push_back(std::move(*k));
    }
    return std::nullopt;
}

}  // namespace

Result<RunResults> results_from_json(const json::value &v, const std::string &file) {
    RunResults out;
    ObjectReader r(v, file, "$");
    out.schema_version = static_cast<int>(r.required_integer("schema_version", 1));
    if (r.ok() && out.schema_version > kResultsSchemaVersion)
        r.fail_at("schema_version", fmt::format("expected at most {} (written by a newer attngate?)", kResultsSchemaVersion));
    out.tool_version = r.string("tool", "");
    out.suite = r.required_string("suite");
    out.suite_file = r.string("suite_file", "");
    out.started_at = r.string("started_at", "");
    out.complete = r.boolean("complete", false);
    if (const auto *c = r.raw("checks"); c && r.ok()) r.adopt(described::from_value(*c, out.checks, file, r.path_of("checks"), true));
    r.raw("verdict");
    r.raw("summary");
    if (const auto *f = r.raw("fingerprint"); f && f->is_object()) out.fingerprint = f->get_object();
    if (const auto *f = r.raw("baseline_fingerprint"); f && f->is_object()) out.baseline_fingerprint = f->get_object();
    if (const auto *w = r.raw("workloads"); w && r.ok()) r.adopt(described::from_value(*w, out.workloads, file, r.path_of("workloads"), true));
    out.machine_class = r.string("machine_class", "");
    out.numerics_class = r.string("numerics_class", "");
    if (const auto *s = r.raw("shard"); s && s->is_object()) out.shard = s->get_object();
    if (const auto *s = r.raw("ab"); s && s->is_object()) out.ab = s->get_object();
    out.host_name = r.string("host_name", "");
    if (const auto *l = r.raw("load_errors"); l && r.ok()) r.adopt(described::from_value(*l, out.load_errors, file, r.path_of("load_errors"), true));
    const json::value *results = r.raw("results");
    if (r.ok() && (!results || !results->is_array())) r.fail_at("results", "expected an array");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < results->get_array().size(); ++i) {
        CaseResult c;
        if (auto e = case_from_json(results->get_array()[i], file, fmt::format("$.results[{}]", i), out.schema_version, c))
            return std::unexpected(*e);
        out.results.push_back(std::move(c));
    }
    out.schema_version = kResultsSchemaVersion;  // read into today's model: written back, it is today's format
    return out;
}

std::string perf_not_gated_because(const CheckResult &k) {
    const PerfMetrics &m = k.as<PerfMetrics>();
    if (k.verdict == Verdict::Error || !m.status) return "not timed";
    switch (*m.status) {
    case PerfCheckStatus::Ok:
    case PerfCheckStatus::Regression:
    case PerfCheckStatus::Improvement: return "";
    case PerfCheckStatus::TooNoisy: return "too noisy";
    case PerfCheckStatus::MachineMoved: return "machine speed moved";
    case PerfCheckStatus::StaleBaseline: return "stale baseline?";
    case PerfCheckStatus::Collecting: return "collecting runs for class " + m.machine_class.value_or("?");
    case PerfCheckStatus::OtherMachine: return "baseline from another machine";
    case PerfCheckStatus::NoBaseline: return "no baseline for class " + m.machine_class.value_or("?");
    }
    return "not timed";
}

Result<RunResults> load_results(const std::filesystem::path &path) {
    auto doc = load_json_file(path);
    if (!doc) return std::unexpected(doc.error());
    return results_from_json(*doc, path.string());
}

Result<std::optional<RunResults>> replaceable_results(const std::filesystem::path &out) {
    std::error_code unreadable;  // an --out that cannot be stat-ed fails later, at the write, with its reason
    const auto status = std::filesystem::symlink_status(out, unreadable);
    if (!unreadable && std::filesystem::is_directory(status))
        return fail(ErrorKind::Usage, "--out {}: is a directory; give the results file's path (e.g. {}/results.json)", out.string(), out.string());
    if (unreadable || !std::filesystem::is_regular_file(status)) return std::nullopt;  // the write refuses links, devices, FIFOs
    if (locked_by_a_writer(out))
        return fail(ErrorKind::Conflict, "--out {}: another attngate run is writing it now (it holds the file's lock); this run stops "
                    "rather than replace that run's results: wait for it, or choose another --out", out.string());
    if (std::filesystem::file_size(out, unreadable) == 0 && !unreadable) return std::nullopt;
    auto previous = load_results(out);
    if (!previous) {
        std::string why = previous.error().message;
        if (const std::string named = out.string() + ": "; why.starts_with(named)) why.erase(0, named.size());
        return fail(ErrorKind::Usage, "--out {}: holds something other than attngate results, which this run would replace; "
                    "choose another --out or move the file away (read as results: {})", out.string(), why);
    }
    return std::optional<RunResults>(std::move(*previous));
}

Result<void> save_results(const RunResults &r, const std::filesystem::path &path) {
    return write_file_atomic(path, pretty_json(to_json(r)));
}

}  // namespace attngate
