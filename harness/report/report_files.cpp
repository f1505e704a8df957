// Writing reports and reading the history of earlier runs.
#include "report/report_files.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "io/files.hpp"
#include "report/gbench.hpp"
#include "report/html.hpp"
#include "report/junit.hpp"
#include "report/markdown.hpp"

namespace attngate {

const std::vector<ReportFormat> &report_formats() {
    static const std::vector<ReportFormat> formats = {
        // Each start is what the serializer writes first, byte for byte; each mark a phrase of its
        // head that a person's own page would not hold (the script's hash rule, the verdict count).
        {"html", "write the self-contained HTML report here", html_serialize,
         {"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
         "'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-",
          "<title>attngate "}},
        {"markdown", "write the Markdown summary (PR comment, $GITHUB_STEP_SUMMARY) here", markdown_serialize, {"## attngate: ",
         " case × kernel failed**, "}},
        {"junit", "write JUnit XML here", [](const RunResults &r, const ReportContext &) { return junit_serialize(r); },
         {"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"attngate ", "<testsuites name=\"attngate "}},
        {"gbench", "write the timing samples as Google Benchmark JSON here (for its compare.py)",
         [](const RunResults &r, const ReportContext &) { return gbench_serialize(r); }, {"{\n  \"context\": {\n    \"date\": ",
         "\"attngate_suite\""}},
    };
    return formats;
}

std::string report_flags_said() {
    const auto &formats = report_formats();
    std::string s;
    for (size_t i = 0; i < formats.size(); ++i)
        s += fmt::format("{}--{}", i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ", formats[i].name);
    return s;
}

bool ReportPaths::any() const {
    return std::any_of(paths.begin(), paths.end(), [](const auto &p) { return !p.second.empty(); });
}

std::string ReportPaths::of(std::string_view format) const {
    const auto it = paths.find(format);
    return it == paths.end() ? std::string() : it->second;
}

Result<void> replaceable_reports(const ReportPaths &paths, const std::string &results) {
    std::map<std::filesystem::path, std::string> seen;  // two outputs into one file: one would be lost
    if (!results.empty()) seen.emplace(std::filesystem::absolute(results).lexically_normal(), "out");
    for (const auto &format : report_formats()) {
        const std::string path = paths.of(format.name);
        if (path.empty()) continue;
        const auto [other, fresh] = seen.emplace(std::filesystem::absolute(path).lexically_normal(), format.name);
        if (!fresh) return fail(ErrorKind::Usage, "--{} {}: --{} writes the same file; give each report its own path", format.name, path, other->second);
        if (auto ok = replaceable_output(fmt::format("--{}", format.name), path, fmt::format("an attngate {} report", format.name), format.mark); !ok)
            return ok;
    }
    return {};
}

Result<void> remove_earlier_reports(const ReportPaths &paths) {
    for (const auto &[format, path] : paths.paths) {
        std::error_code ec;
        if (!path.empty() && !std::filesystem::remove(path, ec) && ec)
            return fail(ErrorKind::Infra, "--{} {}: cannot remove the earlier report: {}", format, path, ec.message());
    }
    return {};
}

Result<void> write_reports(const RunResults &r, const ReportContext &ctx, const ReportPaths &paths) {
    ReportContext with_link = ctx;  // the Markdown names the HTML report it goes with
    if (const std::string html = paths.of("html"); with_link.html_name.empty() && !html.empty())
        with_link.html_name = std::filesystem::path(html).filename().string();
    for (const auto &format : report_formats())
        if (const std::string path = paths.of(format.name); !path.empty())
            if (auto w = write_file_atomic(path, format.serialize(r, with_link)); !w) return w;
    return {};
}

Result<std::vector<RunResults>> load_history(const std::vector<std::string> &paths, const std::string &suite) {
    std::vector<RunResults> out;
    for (const auto &p : paths) {
        std::error_code ec;
        if (std::filesystem::is_directory(p, ec)) {
            std::vector<std::filesystem::path> files;
            for (auto it = std::filesystem::directory_iterator(p, ec); !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
                if (it->path().extension() == ".json") files.push_back(it->path());
            if (ec) return fail(ErrorKind::BadInput, "--history {}: cannot list: {}", p, ec.message());
            for (const auto &f : files)
                if (auto r = load_results(f); r && r->suite == suite) out.push_back(std::move(*r));
            continue;
        }
        auto r = load_results(p);
        if (!r) return fail(ErrorKind::BadInput, "--history {}", r.error().message);
        if (r->suite == suite) out.push_back(std::move(*r));
    }
    std::stable_sort(out.begin(), out.end(), [](const RunResults &a, const RunResults &b) { return a.started_at < b.started_at; });
    return out;
}

}  // namespace attngate
