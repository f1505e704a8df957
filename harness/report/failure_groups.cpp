// Failures grouped by cause, shared by every reporter.
#include "report/failure_groups.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

namespace attngate {

namespace {

/// Which number a group's range is of: the first entry whose check matches and whose kind
/// contains `kind_has` ("" matches any kind).
struct RangeMetric {
    CheckName check;
    const char *kind_has;
    FailureGroup::Figure figure;
    const char *unit;
};
constexpr std::array kRangeMetrics = {
    // A NaN where the golden is finite is the failure: the finite elements' margin is no measure of it.
    RangeMetric{CheckName::Golden, "NaN", nullptr, ""},
    RangeMetric{CheckName::Golden, "", figure_of<&GoldenMetrics::margin>, "× tolerance"},
    RangeMetric{CheckName::Memory, "ABI allocator", figure_of<&MemoryMetrics::abi_leaked_bytes>, "B"},
    RangeMetric{CheckName::Memory, "heap leak", figure_of<&MemoryMetrics::leak_bytes_per_call>, "B/call"},
    RangeMetric{CheckName::Memory, "RSS", figure_of<&MemoryMetrics::rss_slope_bytes_per_call>, "B/call"},
    RangeMetric{CheckName::Memory, "peak", figure_of<&MemoryMetrics::peak_growth_pct>, "% peak growth"},
    RangeMetric{CheckName::Memory, "kept", figure_of<&MemoryMetrics::abi_retained_bytes>, "B kept"},
    RangeMetric{CheckName::Perf, "", figure_of<&PerfMetrics::ratio>, "× baseline time"},
    RangeMetric{CheckName::Compile, "", figure_of<&CompileMetrics::ratio>, "× baseline compile time"},
    RangeMetric{CheckName::Numerics, "", figure_of<&NumericsMetrics::change_vs_tolerance>, "× tolerance changed"},
};

const RangeMetric *range_metric(CheckName check, const std::string &kind) {
    for (const auto &m : kRangeMetrics)
        if (check == m.check && kind.find(m.kind_has) != std::string::npos) return &m;
    return nullptr;
}

bool is_stop_word(const std::string &w) {
    static const std::array<const char *, 8> words = {"with", "after", "at", "of", "by", "in", "over", "than"};
    return std::find(words.begin(), words.end(), w) != words.end();
}

/// The reason's leading words (after any leading count), up to a number, a separator or a
/// parenthesis, e.g. "heap leak", "NaN/inf output(s) where the golden is finite".
std::string leading_words(const std::string &reason) {
    const auto has_digit = [](const std::string &w) { return std::any_of(w.begin(), w.end(), [](unsigned char ch) { return std::isdigit(ch); }); };
    std::istringstream in(reason.substr(0, std::min(reason.find_first_of(":,;<>="), reason.find(" ("))));
    std::vector<std::string> words;
    for (std::string w; in >> w && words.size() < 7;) {
        if (has_digit(w) && words.empty()) continue;  // "12 NaN/inf output(s)": the count is not the kind
        if (has_digit(w)) break;
        words.push_back(w);
    }
    while (!words.empty() && is_stop_word(words.back())) words.pop_back();
    std::string out;
    for (const auto &w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

void add_to_range(FailureGroup &g, const CheckResult &k) {
    const std::optional<double> v = g.figure ? g.figure(k) : std::nullopt;
    if (!v) return;
    const double x = *v;
    g.lo = g.has_range ? std::min(g.lo, x) : x;
    g.hi = g.has_range ? std::max(g.hi, x) : x;
    g.has_range = true;
}

size_t runs_of(const RunResults &r, const std::string &kernel, CheckName check) {
    size_t n = 0;
    for (const auto &c : r.results)
        if (c.kernel == kernel)
            n += std::count_if(c.checks.begin(), c.checks.end(), [&](const CheckResult &k) { return k.check() == check; });
    return n;
}

}  // namespace

std::string error_kind(const CheckResult &k) {
    if (!k.crash) return "kernel_error";
    const std::string &kind = k.crash->kind;
    return kind == "timeout" ? "hang" : kind.empty() ? "kernel_error" : kind;
}

std::string reason_kind(const CheckResult &k) {
    if (k.verdict == Verdict::Error) {
        const std::string kind = error_kind(k);
        if (kind == "crash") return fmt::format("crash {}", k.crash->signal.value_or(""));
        if (kind == "hang") return "hang (time limit)";
        if (kind == "kernel_error") return "kernel error";
        return kind == "exit" ? "exit" : "host " + kind;  // "lost": the kernel host went away
    }
    const std::string words = leading_words(k.reason);
    return words.empty() ? std::string(k.name()) + " drift" : words;
}

std::vector<FailureGroup> failure_groups(const RunResults &r) {
    std::vector<FailureGroup> groups;
    for (const auto &c : r.results)
        for (const auto &k : c.checks) {
            if (!is_failing(k.verdict)) continue;
            const std::string kind = reason_kind(k);
            auto it = std::find_if(groups.begin(), groups.end(), [&](const FailureGroup &g) {
                return g.kernel == c.kernel && g.check == k.check() && g.verdict == k.verdict && g.kind == kind;
            });
            if (it == groups.end()) {
                FailureGroup g;
                g.kernel = c.kernel, g.check = k.check(), g.verdict = k.verdict, g.kind = kind;
                if (const RangeMetric *m = range_metric(k.check(), kind)) g.figure = m->figure, g.unit = m->unit;
                g.of = runs_of(r, c.kernel, k.check());
                it = groups.insert(groups.end(), std::move(g));
            }
            it->rows.push_back({&c, &k});
            add_to_range(*it, k);
        }
    std::stable_sort(groups.begin(), groups.end(), [](const FailureGroup &a, const FailureGroup &b) {
        if (a.verdict != b.verdict) return verdict_rank(a.verdict) < verdict_rank(b.verdict);
        return a.rows.size() > b.rows.size();
    });
    return groups;
}

std::unordered_map<const CheckResult *, const FailureGroup *> index_groups(const std::vector<FailureGroup> &groups) {
    std::unordered_map<const CheckResult *, const FailureGroup *> index;
    for (const auto &g : groups)
        for (const auto &row : g.rows) index[row.check] = &g;
    return index;
}

namespace {
/// Three significant digits, but whole numbers as they are up to seven digits ("4112", not "4.11e+03").
std::string short_number(double x) {
    return std::fabs(x) >= 1000 && std::fabs(x) < 1e7 ? fmt::format("{:.0f}", x) : fmt::format("{:.3g}", x);
}
}  // namespace

std::string describe_group(const FailureGroup &g) {
    std::string s = fmt::format("{} · {}: {} on {}/{} cases", g.kernel, enum_name(g.check), g.kind, g.rows.size(), g.of);
    if (!g.has_range) return s;
    const std::string lo = short_number(g.lo), hi = short_number(g.hi);
    return s + (lo == hi ? fmt::format(", {} {}", lo, g.unit) : fmt::format(", {}–{} {}", lo, hi, g.unit));
}

namespace {

/// The conform command line that probes `kernel` from `origin`: a plugin's path, an adapter's
/// command line or URL, or nothing for a built-in.
std::string conform_command(const std::string &kernel, const std::string &origin) {
    const auto quoted = [](const std::string &w) {
        return w.find_first_of(" \t'\"\\$") == std::string::npos ? w : "'" + w + "'";  // a shell word; ' itself is rare in paths
    };
    std::string source;
    std::error_code ec;
    if (origin.empty() || origin == "built-in") source = "";
    else if (std::filesystem::is_regular_file(origin, ec)) source = " --plugin " + quoted(origin);
    else if (origin.find("://") != std::string::npos) source = " --remote " + quoted(origin);
    else source = " --adapter " + quoted(origin);
    return fmt::format("attngate conform{} --kernel {}", source, quoted(kernel));
}

}  // namespace

std::vector<std::string> convention_advice(const RunResults &r) {
    struct Tally {
        std::string origin;
        size_t failed = 0, passed = 0, nonfinite = 0;  ///< a NaN or inf where the golden is finite: no convention makes one
    };
    std::vector<std::string> kernels;  // by name (a block configuration's label is its kernel's), in results order
    std::unordered_map<std::string, Tally> golden;
    for (const auto &c : r.results)
        for (const auto &k : c.checks)
            if (k.check() == CheckName::Golden && (k.verdict == Verdict::Fail || k.verdict == Verdict::Pass)) {
                const std::string name = c.kernel.substr(0, c.kernel.find('['));
                auto [it, fresh] = golden.try_emplace(name, Tally{c.kernel_origin});
                if (fresh) kernels.push_back(name);
                const auto *g = k.get<GoldenMetrics>();
                if (k.verdict == Verdict::Fail && g && g->new_nonfinite.value_or(0) > 0) ++it->second.nonfinite;
                else ++(k.verdict == Verdict::Fail ? it->second.failed : it->second.passed);
            }
    std::vector<std::string> all;
    for (const auto &kernel : kernels)
        if (const Tally &t = golden.at(kernel); t.failed >= 2 && t.passed == 0 && t.nonfinite == 0)
            all.push_back(fmt::format("{} failed its golden on every case it computed ({}): a kernel that follows another convention (scale, "
                                      "causal alignment, GQA mapping, soft-cap order) fails them all; {} names the one it follows",
                                      kernel, t.failed, conform_command(kernel, t.origin)));
    if (all.size() <= kMaxConventionAdvice) return all;
    std::vector<std::string> out(all.begin(), all.begin() + kMaxConventionAdvice);
    out.push_back(fmt::format("… and {} more kernel(s) that failed their golden on every case they computed", all.size() - kMaxConventionAdvice));
    return out;
}

std::string group_cases(const FailureGroup &g, size_t max_shown) {
    std::string s;
    for (size_t i = 0; i < g.rows.size() && i < max_shown; ++i) s += (i ? ", " : "") + g.rows[i].result->case_id;
    if (g.rows.size() > max_shown) s += fmt::format(", … +{}", g.rows.size() - max_shown);
    return s;
}

}  // namespace attngate
