// Unit tests of the reporters: escaping, the heatmap's colours, each row's data once in the HTML, the Markdown size cap,
// JUnit structure, errors apart from failures, and failures first everywhere.
#include <map>

#include <catch2/catch.hpp>

#include "io/json_io.hpp"
#include "io/files.hpp"
#include "report/console.hpp"
#include "report/escape.hpp"
#include "report/html.hpp"
#include "report/junit.hpp"
#include "report/markdown.hpp"
#include "report/report_files.hpp"
#include "report/summary.hpp"
#include "test_support.hpp"

using namespace attngate;
using attngate::test::results_with;

namespace {

const std::string kXss = "<script>alert(1)</script>";

CaseResult golden_result(const std::string &case_id, const std::string &kernel, double max_abs, double tol) {
    CaseResult c;
    c.case_id = case_id;
    c.kernel = kernel;
    GoldenMetrics m;
    m.max_abs_error = max_abs;
    m.tolerance = tol;
    c.checks.emplace_back(m, max_abs > tol ? Verdict::Fail : Verdict::Pass, fmt::format("max abs error {:.3g} vs {:.3g}", max_abs, tol));
    return c;
}

size_t count(const std::string &haystack, const std::string &needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("markup escaping turns markup characters into entities", "[report]") {
    CHECK(markup_escape(kXss) == "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK(markup_escape("a&b \"q\" 'x'") == "a&amp;b &quot;q&quot; &#39;x&#39;");
    CHECK(markup_escape(std::string("bell\x07")) == "bell\xEF\xBF\xBD");
    CHECK(markdown_cell("a|b\nc") == "a\\|b c");
    // Markdown text is never an attribute: quotes stay readable, markup does not get through.
    CHECK(markdown_cell("kernel \"flash\" was not timed; the workload's <b>") == "kernel \"flash\" was not timed; the workload's &lt;b&gt;");
}

TEST_CASE("mentions in Markdown notify nobody; C1 controls never reach the terminal", "[report]") {
    // Issue 24: a kernel error "cc @octocat @org/team" pinged them from the PR comment.
    const std::string md = markdown_cell("cc @octocat @org/team, mail a@b.c");
    CHECK(md.find("@octocat") == std::string::npos);
    CHECK(md.find("@org") == std::string::npos);
    CHECK_THAT(md, Catch::Contains("@&#8203;octocat") && Catch::Contains("@&#8203;org/team"));
    // U+009B is CSI on terminals that honour C1 controls, like ESC [.
    CHECK(terminal_text("red\xC2\x9B" "31m") == "red\xEF\xBF\xBD" "31m");
    CHECK(terminal_text("caf\xC3\xA9 \xC2\xA0") == "caf\xC3\xA9 \xC2\xA0");  // é and a no-break space stay
}

/// The JSON of the HTML report's rows (html_row_data), parsed.
json::object row_data(const std::string &html) {
    const std::string open = "<script type=\"application/json\" id=\"row-data\">";
    const size_t at = html.find(open) + open.size();
    return json::parse(html.substr(at, html.find("</script>", at) - at)).as_object();
}

TEST_CASE("the heatmap colours bins at or above the tolerance red and NaN black", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 2.0, 1.0)});
    r.results[0].checks[0].as<GoldenMetrics>().error_map =
        ErrorMap{3, 2, 4, 2, "sequence position", "value head dim", "max abs error", {{0.0, 0.1}, {0.5, 1.0}, {2.0, std::nullopt}}};
    const json::object data = row_data(html_serialize(r, {}));
    const json::value &heatmap = data.at("rows").at(0).at(6).at(0).at(4).at("heatmap");
    CHECK(heatmap.at("levels") == "015aab");  // one level per bin: 10 (a) at or above the tolerance, 11 (b) NaN
    CHECK(heatmap.at("cols") == 2);
    CHECK(data.at("heat_colours").at(10) == "#c4001d");  // red
    CHECK(data.at("heat_colours").at(11) == "#000000");  // black
}

TEST_CASE("the HTML holds each row's numbers and reasons once, for the script to draw", "[report]") {
    std::vector<CaseResult> cases;
    for (int i = 0; i < 3; ++i) cases.push_back(golden_result(fmt::format("case_{}", i), "flash", 0.25, 1.0));
    cases.push_back(golden_result("bad", "flash", 3.0, 1.0));
    const std::string html = html_serialize(results_with(std::move(cases)), {});
    CHECK(count(html, "max abs error 0.25 vs 1") == 1);  // the three rows' common reason, once
    CHECK(count(html, "max abs error 3 vs 1") == 2);     // in its failure group and in the data
    CHECK(count(html, "<svg") == 0);                     // drawn by the script, when a row opens
    const json::object data = row_data(html);
    CHECK(data.at("rows").as_array().size() == 4);
    CHECK(data.at("key_names").at(0) == json::array{"max_abs_error", "tolerance", "margin", "rms_error", "rms_tolerance", "rms_margin", "nmse", "worst_coords"});
    const json::value &bad = data.at("rows").at(3);
    CHECK(bad.at(2) == "fail");
    CHECK(data.at("metric_names").at(0) == json::array{"max_abs_error", "tolerance"});  // the names once
    CHECK(bad.at(6).at(0).at(3) == json::array{"3", "1"});                              // each row's values as the tables show them
}

TEST_CASE("every reporter escapes names taken from inputs", "[report]") {
    const RunResults r = results_with({golden_result(kXss, kXss, 2.0, 1.0)});
    const std::string html = html_serialize(r, {});
    CHECK(html.find(kXss) == std::string::npos);
    CHECK(count(html, "<script") == 2);  // the rows' data (no '<' inside) and the script
    const size_t data = html.find("id=\"row-data\">");
    CHECK(html.substr(data, html.find("</script>", data) - data).find('<') == std::string::npos);
    CHECK(row_data(html).at("strings").at(0).as_string() == kXss);  // as text, for the script to write as text
    CHECK(markdown_serialize(r, {}).find(kXss) == std::string::npos);
    const std::string xml = junit_serialize(r);
    CHECK(xml.find(kXss) == std::string::npos);
    CHECK(xml.find("name=\"&lt;script&gt;alert(1)&lt;/script&gt; / &lt;script&gt;alert(1)&lt;/script&gt;\"") != std::string::npos);
}

TEST_CASE("failures come first in the Markdown", "[report]") {
    const RunResults r = results_with({golden_result("ok_case", "flash", 0.1, 1.0), golden_result("bad_case", "flash", 3.0, 1.0)});
    const std::string md = markdown_serialize(r, {});
    CHECK(md.find("FAIL") != std::string::npos);
    CHECK(md.find("bad\\_case") != std::string::npos);
    CHECK(md.find("ok\\_case") == std::string::npos);  // only failures are listed
}

TEST_CASE("the Markdown stays under its cap with thousands of failures", "[report]") {
    std::vector<CaseResult> cases;
    for (int i = 0; i < 4000; ++i) cases.push_back(golden_result(fmt::format("case_{:05}_{}", i, std::string(40, 'x')), "flash", 2.0, 1.0));
    const std::string md = markdown_serialize(results_with(std::move(cases)), {});
    CHECK(md.size() < kMarkdownMaxBytes);
    CHECK(md.find("Failures (4000)") != std::string::npos);
    CHECK(md.find("more failures") != std::string::npos);
}

TEST_CASE("JUnit has one test case per case kernel and check with counts per suite", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 3.0, 1.0), golden_result("b", "flash", 0.5, 1.0)});
    r.results[1].checks.push_back(CheckResult(CheckName::Memory, Verdict::Skip, "not measured"));
    const std::string xml = junit_serialize(r);
    CHECK(count(xml, "<testcase ") == 3);
    CHECK(xml.find("<testsuite name=\"attngate.unit.golden\" tests=\"2\" failures=\"1\"") != std::string::npos);
    CHECK(xml.find("<testsuite name=\"attngate.unit.memory\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\"") != std::string::npos);
    CHECK(xml.find("<failure message=\"flash · golden: max abs error on 1/2 cases\"") != std::string::npos);  // its group
    CHECK(xml.find(">max abs error 3 vs 1\nmax_abs_error=3 tolerance=1<") != std::string::npos);  // its own reason and numbers
    CHECK(xml.find("<skipped message=\"not measured\"/>") != std::string::npos);
}

TEST_CASE("JUnit: a run that did not complete and each source that did not load are errors, numbered apart", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 0.5, 1.0)});
    r.complete = false;
    r.load_errors = {"adapter x: ImportError", "adapter y: ImportError"};
    const std::string xml = junit_serialize(r);
    CHECK(xml.find("<testsuite name=\"attngate.unit.load\" tests=\"3\" failures=\"0\" errors=\"3\"") != std::string::npos);
    CHECK(xml.find("the run did not complete (1 case x kernel row(s) written): these results are partial") != std::string::npos);
    CHECK(xml.find("<testcase name=\"kernel source 1 of 2\"") != std::string::npos);
    CHECK(xml.find("<testcase name=\"kernel source 2 of 2\"") != std::string::npos);  // from review: "2 of 1", "3 of 2"
    CHECK(count(xml, "<testcase name=\"kernel source ") == 2);
    CHECK(xml.find("3 of 2") == std::string::npos);
}

TEST_CASE("JUnit times each case x kernel once however many checks judge it", "[report]") {
    // A case's call is observed once and judged by several checks: the time used to be
    // repeated on each, so the totals were multiplied by the number of checks.
    RunResults r = results_with({golden_result("a", "flash", 0.1, 1.0), golden_result("b", "flash", 0.1, 1.0)});
    r.started_at = "2026-12-02T06:00:00Z";
    r.results[0].seconds = 1.5;
    r.results[1].seconds = 0.25;
    for (auto &c : r.results) {
        c.checks.emplace_back(CheckName::Memory, Verdict::Pass, "");
        c.checks.emplace_back(CheckName::Perf, Verdict::Pass, "");
    }
    const std::string xml = junit_serialize(r);
    CHECK(count(xml, "<testcase ") == 6);
    CHECK(count(xml, "time=\"1.500000\"") == 1);  // a's golden testcase only
    CHECK(count(xml, "time=\"1.750000\"") == 2);  // the golden suite and the whole run: 1.5 + 0.25
    CHECK(xml.find("<testsuites name=\"attngate unit\" tests=\"6\" failures=\"0\" errors=\"0\" time=\"1.750000\">") != std::string::npos);
    CHECK(xml.find("name=\"attngate.unit.golden\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"1.750000\" "
                   "timestamp=\"2026-12-02T06:00:00Z\">") != std::string::npos);
    CHECK(xml.find("name=\"attngate.unit.memory\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0.000000\"") != std::string::npos);
    CHECK(xml.find("<testcase name=\"b / flash\" classname=\"attngate.unit.golden\" time=\"0.250000\">") != std::string::npos);
    CHECK(xml.find("<testcase name=\"b / flash\" classname=\"attngate.unit.perf\" time=\"0.000000\">") != std::string::npos);
}

TEST_CASE("a crash is a JUnit error and drift a failure, counted apart in every format", "[report]") {
    RunResults r = results_with({golden_result("drift", "flash", 3.0, 1.0)});
    CaseResult crashed;
    crashed.case_id = "crash";
    crashed.kernel = "crashy";
    crashed.checks.emplace_back(CheckName::Golden, Verdict::Error, "crashed with SIGSEGV after 0.1 s");
    crashed.checks.back().crash = CrashRecord{"crash", 0.1, "", "SIGSEGV", std::nullopt, std::nullopt};
    r.results.push_back(crashed);
    CHECK(r.verdict() == Verdict::Fail);  // both fail the gate
    CHECK(r.results[1].verdict() == Verdict::Error);
    const std::string xml = junit_serialize(r);
    CHECK(xml.find("<testsuite name=\"attngate.unit.golden\" tests=\"2\" failures=\"1\" errors=\"1\" skipped=\"0\" ") != std::string::npos);
    CHECK(xml.find("<error message=\"crashy · golden: crash SIGSEGV on 1/1 cases\" type=\"crash\">crashed with SIGSEGV after 0.1 s<") != std::string::npos);
    CHECK(xml.find("<failure message=\"flash · golden: max abs error on 1/1 cases\" type=\"drift\">") != std::string::npos);
    const std::string md = markdown_serialize(r, {});
    CHECK(md.find("| golden | 0 | 1 | 1 | 0 |") != std::string::npos);
    CHECK(md.find("Errors and failures (1 errors, 1 failures)") != std::string::npos);
    CHECK(md.find("- **ERROR** crashy · golden: crash SIGSEGV on 1/1 cases") < md.find("- **FAIL** flash · golden: max abs error on 1/1 cases"));
    CHECK(html_serialize(r, {}).find("<tr><td>golden</td><td>0</td><td>1</td><td>1</td><td>0</td></tr>") != std::string::npos);
}

TEST_CASE("the matrix has a block per case, kernel and check, in its verdict's colour", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 0.5, 1.0), golden_result("a", "wrong", 3.0, 1.0), golden_result("b", "flash", 0.1, 1.0)});
    NumericsMetrics changed;
    changed.status = NumericsStatus::Changed;
    r.results[0].checks.emplace_back(changed, Verdict::Pass, "bits changed");
    r.results[0].checks[0].as<GoldenMetrics>().margin = 0.5;
    const std::string html = html_serialize(r, {});
    const std::string matrix = html.substr(html.find("<table id=\"matrix\""), html.find("</table>", html.find("<table id=\"matrix\"")) - html.find("<table id=\"matrix\""));
    CHECK(matrix.find("data-checks=\"golden numerics\"") != std::string::npos);  // a block per check in this order, or a blank
    CHECK(count(matrix, "class=\"ck pass\"") == 2);
    CHECK(count(matrix, "class=\"ck fail\"") == 1);
    CHECK(count(matrix, "<span class=\"ck changed\">n</span>") == 1);  // numerics moved without failing
    CHECK(count(matrix, "<span class=\"ck blank\">") == 2);            // no numerics on a/wrong nor b/flash
    CHECK(count(matrix, "<td class=\"mcell none\">") == 1);            // b was not run on wrong
    CHECK(count(matrix, "style=\"background:hsl(") == 1);               // the one golden with a margin is shaded
    CHECK(matrix.find("<a class=\"mc\" href=\"#r-1\"><span class=\"ck fail\">g</span>") != std::string::npos);
}

TEST_CASE("text for the terminal cannot move the cursor or fake a line", "[report]") {
    // A plugin kernel name or a kernel's stderr once printed a fake "GATE PASSED" line.
    CHECK(terminal_text("x\x1b[2K\rGATE PASSED") == "x\xEF\xBF\xBD[2K\xEF\xBF\xBDGATE PASSED");
    CHECK(terminal_text("one\nGATE PASSED") == "one\n    GATE PASSED");
    CHECK(terminal_text("tab\tand \xC3\xA9") == "tab\tand \xC3\xA9");
    CHECK(terminal_text("bad \xff byte") == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("everything written as JSON is valid UTF-8", "[report]") {
    CHECK(valid_utf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK(valid_utf8("\xff\xfe") == "\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(valid_utf8("\xC3\x28") == "\xEF\xBF\xBD(");        // a lead byte without its continuation
    CHECK(valid_utf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
    CHECK(valid_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
    CHECK(valid_utf8("cut \xE2\x82") == "cut \xEF\xBF\xBD\xEF\xBF\xBD");
    const json::value v = json::object{{"stderr\xff", json::array{"a\xC3", 1}}, {"tail", "x\xfe"}};
    auto back = parse_json(pretty_json(v), "v.json");
    REQUIRE(back);
    CHECK(back->as_object().at("tail").as_string() == "x\xEF\xBF\xBD");
    // Found by fuzz/lockfile_fuzz: two lock file names that differ only in invalid bytes
    // became one key twice, and the written file was then refused. The first is kept.
    const json::value twins = json::object{{"jax\xff", "1"}, {"jax\xfe", "2"}, {"ok", "3"}};
    auto read = parse_json(pretty_json(twins), "twins.json");
    REQUIRE(read);
    CHECK(read->as_object().size() == 2);
    CHECK(read->as_object().at("jax\xEF\xBF\xBD").as_string() == "1");
}

TEST_CASE("a paged case's lengths are said in full when short and cut when long", "[report]") {
    CHECK(paged_said(json::object{{"batch", 2}}).empty());
    json::object p{{"q_lens", json::array{1, 9}}, {"kv_lens", json::array{33, 50}}, {"page_size", 16}, {"pages", 9}, {"layout", "scattered"}};
    CHECK(paged_said(json::object{{"paged", p}}) == "paged: 2 seqs, q_lens [1, 9], kv_lens [33, 50], page_size 16, 9 pages, scattered");
    json::array kv;
    for (int i = 1; i <= 65536; ++i) kv.push_back(i);
    p["kv_lens"] = kv;
    const std::string said = paged_said(json::object{{"paged", p}});
    CHECK(said.find("65536 seqs") != std::string::npos);
    CHECK(said.find("kv_lens [1, 2, 3, 4, 5, 6, …, 65536]") != std::string::npos);
    CHECK(said.size() < 200);
}

TEST_CASE("a long case id or kernel name keeps the console's columns in place", "[report]") {
    // The terminal column where `needle` starts in `line`: code points before it, not bytes.
    const auto column = [](const std::string &line, const std::string &needle) {
        const size_t at = line.find(needle);
        REQUIRE(at != std::string::npos);
        size_t n = 0;
        for (size_t i = 0; i < at; ++i) n += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
        return n;
    };
    const std::string header = console_header();
    const std::string id = "paged-ragged-decode-b5-q1x5-kv200x31-page16-layout-hnd", kernel = "my-team-flash-attention-v2-bf16";
    const std::string line = console_line(golden_result(id, kernel, 1e-3, 1e-2), 3, 10), short_line = console_line(golden_result("a", "b", 1e-3, 1e-2), 3, 10);
    // Every column after the case and kernel starts where it does for short names.
    CHECK(column(line, " PASS") == column(short_line, " PASS"));
    CHECK(column(line, "1.00e-03") == column(short_line, "1.00e-03"));
    CHECK(column(header, "max_abs") + 7 == column(line, "1.00e-03") + 8);  // right-aligned under its header
    // The head and the tail of each name stay, around an ellipsis.
    CHECK(line.find("paged-ragged-") != std::string::npos);
    CHECK(line.find("layout-hnd") != std::string::npos);
    CHECK(line.find("my-team-fla") != std::string::npos);
    CHECK(line.find("v2-bf16") != std::string::npos);
    CHECK(count(line, "…") == 2);
    // Names that fit are shown whole, without an ellipsis.
    CHECK(short_line.find("…") == std::string::npos);
}

TEST_CASE("a report path is replaced only when it holds nothing or an earlier report of its format", "[report]") {
    attngate::test::TempDir dir;
    RunResults r = results_with({golden_result("mha_f32", "flash", 0.1, 1.0)});
    r.suite = std::string(300, 's');  // a long suite name comes after each mark, never before it
    ReportPaths paths;
    for (const auto &format : report_formats()) paths.paths[std::string(format.name)] = (dir.path() / format.name).string();
    for (const auto &format : report_formats()) {
        INFO(format.name);
        CHECK(format.serialize(r, {}).substr(0, kOutputMarkBytes).find(format.mark.mark) != std::string::npos);
    }
    CHECK(replaceable_reports(paths));  // nothing there yet
    REQUIRE(write_reports(r, {}, paths));
    CHECK(replaceable_reports(paths));  // last run's reports
    for (const auto &format : report_formats()) {
        INFO(format.name);
        const auto path = dir.path() / format.name;
        const std::string source = "// team_kernels.cpp\n#include <cmath>\nint main() { return 0; }\n";
        REQUIRE(write_file_atomic(path, source));
        auto refused = replaceable_reports(paths);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().kind == ErrorKind::Usage);
        CHECK(refused.error().message.starts_with(fmt::format("--{} {}: holds something other than an attngate {} report", format.name,
                                                              path.string(), format.name)));
        CHECK(read_file(path).value() == source);
        REQUIRE(write_file_atomic(path, ""));  // an empty file: nothing to lose
        CHECK(replaceable_reports(paths));
        REQUIRE(write_file_atomic(path, format.serialize(r, {})));
    }
    // A page that quotes every mark (docs/reports.md does) is not a report: each must start its file.
    const std::string manual = "# Reports\n\n`<!DOCTYPE html>`, `<title>attngate `, `## attngate: `, `<?xml `, "
                               "`<testsuites name=\"attngate `, `{`, `\"attngate_suite\"`\n";
    for (const auto &format : report_formats()) {
        INFO(format.name);
        const auto path = dir.path() / format.name;
        REQUIRE(write_file_atomic(path, manual));
        CHECK_FALSE(replaceable_reports(paths));
        REQUIRE(write_file_atomic(path, ""));
    }
    // A person's own page headed as a report is: notes headed "## attngate: ...", a page titled "attngate ...".
    const std::map<std::string, std::string> own = {
        {"markdown", "## attngate: how we gate\n\nWe run it on every PR.\n"},
        {"html", "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>attngate report notes</title></head></html>\n"},
        {"junit", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"other\"></testsuites>\n"},
        {"gbench", "{\n  \"context\": {\n    \"date\": \"x\"\n  },\n  \"benchmarks\": []\n}\n"}};
    for (const auto &[name, text] : own) {
        INFO(name);
        REQUIRE(write_file_atomic(dir.path() / name, text));
        CHECK_FALSE(replaceable_reports(paths));
        REQUIRE(write_file_atomic(dir.path() / name, ""));
    }
    // A link is refused now, not by the write after the run; so is the results' own path.
    std::filesystem::create_symlink(dir.path() / "html", dir.path() / "link.html");
    ReportPaths linked;
    linked.paths["html"] = (dir.path() / "link.html").string();
    CHECK(replaceable_reports(linked).error().message.find("not a regular file") != std::string::npos);
    ReportPaths gbench;
    gbench.paths["gbench"] = (dir.path() / "results.json").string();
    CHECK(replaceable_reports(gbench, (dir.path() / "results.json").string()).error().message.find("--out writes the same file") !=
          std::string::npos);
    CHECK(replaceable_reports(gbench, (dir.path() / "other.json").string()));
    // Two formats into one file, or a directory where a file goes: refused before any run.
    ReportPaths same;
    same.paths["html"] = same.paths["markdown"] = (dir.path() / "r").string();
    CHECK(replaceable_reports(same).error().message.find("writes the same file") != std::string::npos);
    ReportPaths directory;
    directory.paths["junit"] = dir.path().string();
    CHECK(replaceable_reports(directory).error().message.find("is a directory") != std::string::npos);
}

TEST_CASE("bits that moved are said 'without failing' only of rows that passed every check", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 0.5, 1.0), golden_result("b", "flash", 3.0, 1.0)});
    NumericsMetrics changed;
    changed.status = NumericsStatus::Changed;
    changed.changed = 4;
    changed.compared = 64;
    for (auto &row : r.results) row.checks.emplace_back(changed, Verdict::Pass, "bits changed");
    const std::string said = numerics_changed_said(r);
    CHECK(said.starts_with("numerics: bits changed on 1 row(s) without failing: a / flash (4 of 64 elements changed)"));
    CHECK(said.find("b / flash") == std::string::npos);  // its golden check failed
    // A NaN that appeared has no distance in ulp: said, never "max 0 ulp".
    for (auto &k : r.results[0].checks)
        if (auto *m = k.get<NumericsMetrics>()) m->max_ulp = std::optional<int64_t>{}, m->nan_changed = 3;
    CHECK(numerics_changed_said(r).starts_with("numerics: bits changed on 1 row(s) without failing: a / flash (4 of 64 elements changed, 3 became or stopped being NaN)"));
    for (auto &k : r.results[0].checks)
        if (auto *m = k.get<NumericsMetrics>()) m->max_ulp = std::optional<int64_t>{7}, m->nan_changed = 0;
    CHECK(numerics_changed_said(r).starts_with("numerics: bits changed on 1 row(s) without failing: a / flash (4 of 64 elements changed, max 7 ulp of float32)"));
    r.results.pop_back();
    r.results[0].checks[0].verdict = Verdict::Fail;
    CHECK(numerics_changed_said(r).empty());
}

TEST_CASE("a report names the gate's checks the run did not apply, and a shard's part of the plan", "[report]") {
    RunResults r = results_with({golden_result("a", "flash", 0.5, 1.0)});
    r.checks = {CheckName::Golden, CheckName::Memory, CheckName::Perf, CheckName::Cost};
    CHECK(unchecked_said(r).empty());
    CHECK(markdown_serialize(r, {}).find("not checked") == std::string::npos);
    r.checks = {CheckName::Golden, CheckName::Numerics, CheckName::Perf, CheckName::Memory};
    r.ab = {{"a", "base/attngate"}, {"b", "head/attngate"}};  // a PR's A/B: its cost is not gated
    CHECK(unchecked_said(r) == "not checked: cost (`attngate ab` compares golden, numerics, memory and perf; `attngate run` gates the others)");
    CHECK(html_serialize(r, {}).find("id=\"unchecked\">not checked: cost") != std::string::npos);
    CHECK(markdown_serialize(r, {}).find("not checked: cost") != std::string::npos);
    CHECK(shard_said(r).empty());
    r.shard = {{"index", 2}, {"count", 3}, {"unit", "case/kernel"}, {"plan", {"a/flash", "b/flash", "c/flash"}}, {"mine", {"a/flash"}}};
    CHECK(shard_said(r).starts_with("shard 2 of 3: 1 of the plan's 3 case × kernel rows ran here"));
    CHECK(markdown_serialize(r, {}).find("> shard 2 of 3: 1 of the plan") != std::string::npos);
}
