// Instruction counts through callgrind's client requests, and its dump files read back.
#include "backend/instruction_count.hpp"

#include <charconv>
#include <optional>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "io/files.hpp"

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

}  // namespace attngate
