// Baseline update planning, provenance and writing.
#include "store/baseline_update.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include <fnmatch.h>
#include <pwd.h>
#include <unistd.h>

namespace attngate {

const std::vector<BaselineKind> &baseline_kinds() {
    static const std::vector<BaselineKind> kinds = {
        // The RSS delta moves by pages from run to run; the ABI's peak is exact.
        {"memory", {"abi_peak_bytes", "rss_peak_delta_bytes", "leak_bytes_per_call"}, "abi_peak_bytes", false, {"abi_peak_bytes"}},
        {"perf", {"samples_s", "median_s", "mad_s", "tokens_per_s", "gflops", "calibration_s", "parallel_calibration_s", "calibration_workload"}, "median_s", true, {}},
        {"compile", {"compile_s"}, "compile_s", true, {}},
        // One call's instructions under callgrind (--perf-metric instructions): they depend
        // on the code path the CPU's flags select, so they are kept per machine class too.
        {"instructions", {"instructions"}, "instructions", true, {"instructions"}},
        // Output bits depend on the CPU's code paths (the built-ins dispatch on its flags,
        // XLA compiles for it): kept per machine class.
        {"numerics", {"sha256", "elements", "sample_bits"}, "elements", true, {"sha256", "elements"}},
    };
    return kinds;
}

const BaselineKind *find_baseline_kind(std::string_view check) {
    for (const auto &k : baseline_kinds())
        if (k.check == check) return &k;
    return nullptr;
}

std::optional<double> UpdateRow::change_pct() const {
    if (!old_value || *old_value == 0.0) return std::nullopt;
    return 100.0 * (new_value / *old_value - 1.0);
}

namespace {

/// Equal values, with numbers compared as numbers (a baseline read back may hold 1100.0 for 1100).
bool same_value(const json::value &a, const json::value &b) {
    if (a.is_number() && b.is_number()) return a.to_number<double>() == b.to_number<double>();
    return a == b;
}

}  // namespace

std::vector<UpdateRow> plan_update(const RunResults &results, const BaselineKind &kind, const BaselineFile *existing,
                                   const std::string &only) {
    std::vector<UpdateRow> rows;
    for (const auto &r : results.results) {
        const CheckResult *check = nullptr;
        bool golden_failed = false;
        for (const auto &c : r.checks) {
            if (c.check == kind.check) check = &c;
            if (c.check == "golden" && is_failing(c.verdict)) golden_failed = true;
        }
        if (!check) continue;  // a skipped check still has its numbers when only the baseline was missing
        const json::value *headline = check->metrics.if_contains(kind.headline);
        if (!headline || !headline->is_number()) continue;  // crashed or not measured
        UpdateRow row;
        row.case_id = r.case_id;
        row.kernel = r.kernel;
        if (!only.empty() && ::fnmatch(only.c_str(), row.label().c_str(), 0) != 0) continue;
        row.new_value = headline->to_number<double>();
        row.verdict = check->verdict;
        row.golden_failed = golden_failed;
        for (const auto &key : kind.keys)
            if (const json::value *v = check->metrics.if_contains(key)) row.values[key] = *v;
        const BaselineEntry *entry = existing ? existing->find(r.case_id, r.kernel) : nullptr;
        if (entry)
            if (const json::value *v = entry->values.if_contains(kind.headline); v && v->is_number()) row.old_value = v->to_number<double>();
        row.changed = !entry || row.verdict != Verdict::Pass ||
                      std::any_of(kind.exact.begin(), kind.exact.end(), [&](const std::string &key) {
                          const json::value *was = entry->values.if_contains(key), *now = row.values.if_contains(key);
                          return !was || !now || !same_value(*was, *now);
                      });
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

std::string machine_class(const std::string &name) {
    std::string cls = fmt::format("{} x{}", cpu_model(), std::thread::hardware_concurrency());
    return name.empty() ? cls : fmt::format("{} ({})", name, cls);
}

json::object make_provenance(const std::string &reason, const std::string &machine, const json::object &fingerprint) {
    const std::time_t t = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    std::string commit = command_output("git rev-parse HEAD 2>/dev/null");
    return json::object{{"date", date},
                        {"user", user_name()},
                        {"git_commit", commit.empty() ? "unknown" : commit},
                        {"machine_class", machine},
                        {"reason", reason},
                        {"fingerprint", fingerprint}};
}

Result<void> apply_update(Store &store, const std::string &key, BaselineFile file, const std::vector<UpdateRow> &accepted,
                          const json::object &provenance) {
    for (const auto &row : accepted) file.upsert(BaselineEntry{row.case_id, row.kernel, row.values, provenance});
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
        else if (json::value(old->values) != json::value(e.values) || json::value(old->provenance) != json::value(e.provenance))
            out.push_back(fmt::format("{}/{}: changed {}", e.case_id, e.kernel, provenance_text(e)));
    }
    if (read)
        for (const auto &e : read->entries)
            if (!now->find(e.case_id, e.kernel)) out.push_back(fmt::format("{}/{}: removed", e.case_id, e.kernel));
    return out;
}

}  // namespace attngate
