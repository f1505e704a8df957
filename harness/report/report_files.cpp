// Writing reports and reading the history of earlier runs.
#include "report/report_files.hpp"

#include <algorithm>
#include <filesystem>

#include "io/files.hpp"
#include "report/gbench.hpp"
#include "report/html.hpp"
#include "report/junit.hpp"
#include "report/markdown.hpp"

namespace attngate {

Result<void> write_reports(const RunResults &r, const ReportContext &ctx, const ReportPaths &paths) {
    ReportContext with_link = ctx;
    if (with_link.html_name.empty() && !paths.html.empty()) with_link.html_name = std::filesystem::path(paths.html).filename().string();
    const std::pair<const std::string *, std::string (*)(const RunResults &, const ReportContext &)> writers[] = {
        {&paths.html, html_serialize},
        {&paths.markdown, markdown_serialize},
        {&paths.junit, [](const RunResults &x, const ReportContext &) { return junit_serialize(x); }},
        {&paths.gbench, [](const RunResults &x, const ReportContext &) { return gbench_serialize(x); }},
    };
    for (const auto &[path, serialize] : writers)
        if (!path->empty())
            if (auto w = write_file_atomic(*path, serialize(r, with_link)); !w) return w;
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
