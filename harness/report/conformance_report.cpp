// Console and JSON forms of the conformance report.
#include "report/conformance_report.hpp"

#include <map>

#include <fmt/format.h>

#include "io/json_io.hpp"
#include "report/escape.hpp"

namespace attngate {

std::string conformance_line(const ProbeOutcome &o) {
    return fmt::format("  {:<4} {:<18} {:<30} {:<9} {}\n", o.pass ? "ok" : "FAIL", o.probe, o.case_id, label_name(o.label),
                       terminal_text(o.message));
}

std::string conformance_console(const ConformanceReport &r) {
    std::string s;
    for (const auto &e : r.load_errors) s += fmt::format("load error: {}\n", terminal_text(e));  // an adapter's words
    size_t failing = 0;
    for (const auto &k : r.kernels) {
        std::map<std::string, int> labels;
        for (const auto &o : k.outcomes) ++labels[label_name(o.label)];
        std::string counts;
        for (const auto &[label, n] : labels) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, label);
        failing += !k.pass();
        s += fmt::format("{} ({}): {}{}\n", k.kernel, k.origin, k.pass() ? "conforms" : "DOES NOT CONFORM",
                         k.error.empty() ? fmt::format(" ({} probe cases: {})", k.outcomes.size(), counts) : ": " + terminal_text(k.error));
        for (const auto &o : k.outcomes)
            if (!o.pass) s += conformance_line(o);
        for (const auto &sk : k.skipped) s += fmt::format("  --   {:<18} not probed: {}\n", sk.probe, terminal_text(sk.reason));
    }
    s += fmt::format("{} of {} kernels conform{}\n", r.kernels.size() - failing, r.kernels.size(),
                     r.load_errors.empty() ? "" : fmt::format("; {} kernel sources did not load", r.load_errors.size()));
    return s;
}

boost::json::object conformance_json(const ConformanceReport &r) {
    json::array kernels;
    for (const auto &k : r.kernels) {
        json::array probes, skipped;
        for (const auto &o : k.outcomes) {
            json::array distances;
            for (const auto &d : o.distances)
                distances.push_back({{"candidate", d.name}, {"max_error", d.max_error}, {"nan_mismatch", d.nan_mismatch}, {"fits", d.fits}});
            probes.push_back({{"probe", o.probe}, {"case", o.case_id}, {"label", label_name(o.label)}, {"follows", o.follows},
                              {"closest", o.closest}, {"pass", o.pass}, {"message", o.message}, {"distances", distances}});
        }
        for (const auto &sk : k.skipped) skipped.push_back({{"probe", sk.probe}, {"reason", sk.reason}});
        kernels.push_back({{"kernel", k.kernel}, {"origin", k.origin}, {"pass", k.pass()}, {"error", k.error}, {"probes", probes},
                           {"skipped", skipped}});
    }
    json::array errors(r.load_errors.begin(), r.load_errors.end());
    return {{"pass", r.pass()}, {"kernels", kernels}, {"load_errors", errors}};
}

}  // namespace attngate
