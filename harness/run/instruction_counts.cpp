// Spawns `attngate time --metric instructions` under callgrind and reads its counts.
#include "run/instruction_counts.hpp"

#include <set>

#include <fmt/format.h>

#include "backend/instruction_count.hpp"
#include "io/json_io.hpp"
#include "io/process.hpp"

namespace attngate {

std::string instruction_counting_unavailable() {
    if (find_on_path("valgrind").empty()) return "instruction counts need valgrind (callgrind) on PATH: not found (apt install valgrind)";
    return {};
}

Result<std::map<std::pair<std::string, std::string>, double>> count_under_callgrind(const CountRequest &req) {
    TempDir dir("count");
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
