// Baseline update planning, provenance and writing.
#include "store/baseline_update.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <type_traits>
#include <variant>

#include <fnmatch.h>
#include <pwd.h>
#include <unistd.h>

#include "io/process.hpp"

namespace attngate {

const std::vector<BaselineKind> &baseline_kinds() {
    static const std::vector<BaselineKind> kinds = {
        {CheckName::Memory, false},
        {CheckName::Perf, true},
        {CheckName::Compile, true},
        // One call's instructions under callgrind (--perf-metric instructions): they depend
        // on the code path the CPU's flags select, so they are kept per machine class too.
        {CheckName::Instructions, true},
        // Output bits depend on the CPU's code paths (the built-ins dispatch on its flags,
        // XLA compiles for it): kept per machine class.
        {CheckName::Numerics, true},
        // The TPU program depends on jax, jaxlib and the target chip, not on the runner.
        {CheckName::Program, false},
    };
    return kinds;
}

const BaselineKind *find_baseline_kind(std::string_view check) {
    for (const auto &k : baseline_kinds())
        if (check == k.name()) return &k;
    return nullptr;
}

std::optional<BaselineValues> baseline_values_of(const CheckResult &c) {
    std::optional<BaselineValues> out;
    boost::mp11::mp_for_each<boost::mp11::mp_rename<BaselineValues, boost::mp11::mp_list>>([&](auto kind) {
        using Kept = decltype(kind);
        using Metrics = std::variant_alternative_t<static_cast<size_t>(Kept::kCheck), CheckMetrics>;
        if (const Metrics *m = c.get<Metrics>()) out = copy_namesakes<Kept>(*m);
    });
    return out;
}

namespace {
std::optional<double> headline(const BaselineValues &v) {
    return std::visit([](const auto &kept) { return kept.headline(); }, v);
}

/// Whether a row whose check passed differs from what is stored: its exact values moved.
/// Timings differ on every run (moved_from says nullopt): then the pass says unchanged.
bool moved(const BaselineValues &now, const BaselineValues &stored) {
    return std::visit(
        [](const auto &n, const auto &s) {
            if constexpr (std::is_same_v<decltype(n), decltype(s)>) return n.moved_from(s).value_or(false);
            else return true;
        },
        now, stored);
}
}  // namespace

std::optional<double> UpdateRow::change_pct() const {
    if (!old_value || *old_value == 0.0) return std::nullopt;
    return 100.0 * (new_value / *old_value - 1.0);
}

std::vector<UpdateRow> plan_update(const RunResults &results, const BaselineKind &kind, const BaselineFile *existing,
                                   const std::string &only) {
    std::vector<UpdateRow> rows;
    for (const auto &r : results.results) {
        const CheckResult *check = nullptr;
        bool golden_failed = false;
        for (const auto &c : r.checks) {
            if (c.check() == kind.check) check = &c;
            if (c.check() == CheckName::Golden && is_failing(c.verdict)) golden_failed = true;
        }
        if (!check) continue;  // a skipped check still has its numbers when only the baseline was missing
        auto values = baseline_values_of(*check);
        const auto now = values ? headline(*values) : std::nullopt;
        if (!now || !std::isfinite(*now)) continue;  // crashed or not measured
        UpdateRow row;
        row.case_id = r.case_id;
        row.kernel = r.kernel;
        if (!only.empty() && ::fnmatch(only.c_str(), row.label().c_str(), 0) != 0) continue;
        row.new_value = *now;
        row.verdict = check->verdict;
        if (golden_failed) row.refused = "its golden check failed";
        else if (const MemoryMetrics *m = check->get<MemoryMetrics>(); m && check->verdict == Verdict::Fail && !m->peak_baseline_bytes)
            row.refused = "a baseline does not change this memory failure: " + check->reason;  // a leak, a broken promise
        row.values = std::move(values);
        const BaselineEntry *entry = existing ? existing->find(r.case_id, r.kernel) : nullptr;
        if (entry) row.old_values = entry->values;
        if (entry)
            if (const auto old = headline(entry->values); old && std::isfinite(*old)) row.old_value = old;
        row.changed = !entry || row.verdict != Verdict::Pass || moved(*row.values, entry->values);
        rows.push_back(std::move(row));
    }
    return rows;
}

namespace {

std::string command_output(const char *cmd) {
    std::string out;
    if (FILE *p = ::popen(cmd, "r")) {
        char buf[256];
        while (std::fgets(buf, sizeof buf, p)) out += buf;
        ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

std::string user_name() {
    if (const char *u = std::getenv("USER"); u && *u) return u;
    if (const passwd *pw = ::getpwuid(::getuid())) return pw->pw_name;
    return "unknown";
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

}  // namespace

std::string machine_class(const std::string &name, const std::string &dispatch_path) {
    std::string cls = fmt::format("{} x{} {}", cpu_model(), std::thread::hardware_concurrency(), dispatch_path);
    return name.empty() ? cls : fmt::format("{} ({})", name, cls);
}

json::object make_provenance(const std::string &reason, const std::string &machine, const json::object &fingerprint) {
    std::string commit = command_output("git rev-parse HEAD 2>/dev/null");
    return json::object{{"date", utc_timestamp()},
                        {"user", user_name()},
                        {"git_commit", commit.empty() ? "unknown" : commit},
                        {"machine_class", machine},
                        {"reason", reason},
                        {"fingerprint", fingerprint}};
}

Result<void> apply_update(Store &store, const std::string &key, BaselineFile file, const std::vector<UpdateRow> &accepted,
                          const json::object &provenance) {
    for (const auto &row : accepted) {
        ATTNGATE_CHECK(row.values);
        file.upsert(BaselineEntry{row.case_id, row.kernel, *row.values, {}, provenance});
    }
    if (auto w = save_baseline_file(store, key, file); !w) return std::unexpected(w.error());
    return {};
}

namespace {
std::string provenance_text(const BaselineEntry &e) {
    const auto field = [&](const char *k) {
        const auto *v = e.provenance.if_contains(k);
        return v && v->is_string() ? std::string(v->get_string()) : std::string("?");
    };
    return fmt::format("by {} at {}, reason \"{}\"", field("user"), field("date"), field("reason"));
}
}  // namespace

std::vector<std::string> describe_baseline_changes(const std::optional<BaselineFile> &read, const std::optional<BaselineFile> &now) {
    std::vector<std::string> out;
    if (!now) {
        out.push_back("the file was removed");
        return out;
    }
    for (const auto &e : now->entries) {
        const BaselineEntry *old = read ? read->find(e.case_id, e.kernel) : nullptr;
        if (!old) out.push_back(fmt::format("{}/{}: added {}", e.case_id, e.kernel, provenance_text(e)));
        else if (baseline_values_json(*old) != baseline_values_json(e) || json::value(old->provenance) != json::value(e.provenance))
            out.push_back(fmt::format("{}/{}: changed {}", e.case_id, e.kernel, provenance_text(e)));
    }
    if (read)
        for (const auto &e : read->entries)
            if (!now->find(e.case_id, e.kernel)) out.push_back(fmt::format("{}/{}: removed", e.case_id, e.kernel));
    return out;
}

}  // namespace attngate
