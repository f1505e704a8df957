// Instruction counts: the counting child spawned under callgrind, its client requests, and its dumps read back.
#include "backend/instruction_count.hpp"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "io/files.hpp"
#include "io/json_io.hpp"
#include "io/process.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define ATTNGATE_HAVE_CALLGRIND 1
#endif

namespace attngate {

std::vector<std::string> callgrind_argv(const std::filesystem::path &out_file) {
    // Only the totals are read back: no per-line or per-instruction detail.
    return {"valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file.string(), "--dump-line=no", "--dump-instr=no",
            "--quiet"};
}

Result<double> callgrind_total(const std::string &dump, const std::string &where) {
    std::istringstream lines(dump);
    std::string line;
    std::optional<double> summary;
    while (std::getline(lines, line))
        for (const std::string key : {"totals:", "summary:"})
            if (line.starts_with(key)) {
                const char *first = line.data() + key.size();
                while (*first == ' ') ++first;
                double v = 0;
                if (std::from_chars(first, line.data() + line.size(), v).ec != std::errc{})
                    return fail(ErrorKind::Infra, "{}: \"{}\": expected a count after \"{}\"", where, line, key);
                if (key == "totals:") return v;
                summary = v;
            }
    if (summary) return *summary;
    return fail(ErrorKind::Infra, "{}: no \"totals:\" or \"summary:\" line: not a callgrind dump", where);
}

Result<double> count_instructions(const std::function<void()> &call) {
#ifndef ATTNGATE_HAVE_CALLGRIND
    (void)call;
    return fail(ErrorKind::Infra, "attngate was built without valgrind/callgrind.h (apt install valgrind, then rebuild)");
#else
    if (!RUNNING_ON_VALGRIND) return fail(ErrorKind::Usage, "instruction counts need this process under valgrind --tool=callgrind");
    const char *out = std::getenv(kCallgrindOutEnv);
    if (!out || !*out) return fail(ErrorKind::Usage, "{} is not set: where callgrind writes its dumps", kCallgrindOutEnv);
    static int dumps = 0;  // callgrind numbers its dumps from 1 within the process
    call();  // warm: first-touch pages and lazy state are not what repeated calls execute
    CALLGRIND_ZERO_STATS;
    call();
    CALLGRIND_DUMP_STATS_AT("attngate");
    const std::string file = fmt::format("{}.{}", out, ++dumps);
    auto text = read_file(file);
    if (!text) return std::unexpected(text.error());
    return callgrind_total(*text, file);
#endif
}

std::string instruction_counting_unavailable() {
    if (find_on_path("valgrind").empty()) return "instruction counts need valgrind (callgrind) on PATH: not found (apt install valgrind)";
    return {};
}

Result<std::map<std::pair<std::string, std::string>, double>> count_under_callgrind(const CountRequest &req) {
    TempDir dir("count");
    if (auto m = dir.made(); !m) return std::unexpected(m.error());
    const auto dumps = dir.path / "callgrind.out", out = dir.path / "counts.json";
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return fail(ErrorKind::Infra, "/proc/self/exe: {}: cannot find this attngate to count under callgrind", ec.message());
    std::vector<std::string> argv = callgrind_argv(dumps);
    for (std::string a : {self.string(), std::string("time"), std::string("--suite"), req.suite_file.string()}) argv.push_back(a);
    for (const auto &p : req.plugins) argv.insert(argv.end(), {"--plugin", p});
    std::set<std::string> cases, kernels;
    for (const auto &[c, k] : req.labels) cases.insert(c), kernels.insert(k);
    for (const auto &c : cases) argv.insert(argv.end(), {"--case", c});
    for (const auto &k : kernels) argv.insert(argv.end(), {"--kernel", k});
    argv.insert(argv.end(), {"--metric", "instructions", "--no-isolation", "--out", out.string()});
    const std::string what = fmt::format("valgrind --tool=callgrind {} time --metric instructions", self.string());
    if (auto r = spawn(argv, dir.path / "stderr.txt", req.timeout_s, what, {fmt::format("{}={}", kCallgrindOutEnv, dumps.string())}); !r)
        return std::unexpected(r.error());
    auto doc = load_json_file(out);
    if (!doc) return std::unexpected(doc.error());
    if (!doc->is_array()) return fail(ErrorKind::Infra, "{}: $: expected an array of counts", out.string());
    std::map<std::pair<std::string, std::string>, double> counts;
    for (size_t i = 0; i < doc->get_array().size(); ++i) {
        ObjectReader r(doc->get_array()[i], out.string(), fmt::format("$[{}]", i));
        const std::string c = r.required_string("case"), k = r.required_string("kernel");
        const double n = r.number("instructions", -1.0);
        if (r.ok() && !(n > 0)) r.fail_at("instructions", "expected a positive count");
        if (auto e = r.finish()) return std::unexpected(*e);
        counts[{c, k}] = n;
    }
    return counts;
}

}  // namespace attngate
