// Pricing and workload files, cost projections and the leak-versus-restart verdict.
#include "checks/cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "io/json_io.hpp"
#include "store/keys.hpp"

namespace attngate {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A required number in [min, max] (max = inf: unbounded above), or def after an error.
double bounded_number(ObjectReader &r, std::string_view key, double min, double max, const char *what,
                      std::optional<double> def = std::nullopt) {
    if (!r.ok()) return def.value_or(0.0);
    if (!def && !r.has(key)) {
        r.fail_at(key, fmt::format("required field is missing (expected {})", what));
        return 0.0;
    }
    const double x = r.number(key, def.value_or(0.0));
    if (r.ok() && !(x >= min && x <= max)) r.fail_at(key, fmt::format("expected {}, got {}", what, x));
    return x;
}

/// The array field key, or an error naming it.
const json::array *required_array(ObjectReader &r, std::string_view key, const char *what) {
    const json::value *v = r.raw(key);
    if (!r.ok()) return nullptr;
    if (!v || !v->is_array() || v->get_array().empty()) {
        r.fail_at(key, fmt::format("expected a non-empty array of {}", what));
        return nullptr;
    }
    return &v->get_array();
}

std::optional<Error> read_device(const json::value &v, const std::string &file, const std::string &path,
                                 DevicePrice &d) {
    static const std::regex kDate("[0-9]{4}-[0-9]{2}-[0-9]{2}");
    ObjectReader r(v, file, path);
    d.device_class = r.required_string("class");
    d.description = r.string("description", "");
    d.price_per_hour = bounded_number(r, "price_per_hour", 0.0, kInf, "a price per hour >= 0");
    d.source = r.required_string("source");
    if (r.ok() && d.source.empty()) r.fail_at("source", "expected where the price comes from (a URL or a document)");
    d.as_of = r.required_string("as_of");
    if (r.ok() && !std::regex_match(d.as_of, kDate)) r.fail_at("as_of", "expected a date YYYY-MM-DD");
    d.note = r.string("note", "");
    return r.finish();
}

std::optional<Error> read_shape(const json::value &v, const std::string &file, const std::string &path,
                                WorkloadShape &s) {
    ObjectReader r(v, file, path);
    s.json_path = path;
    s.case_id = r.required_string("case");
    s.requests_per_second = bounded_number(r, "requests_per_second", 0.0, kInf, "a request rate >= 0");
    s.calls_per_request = bounded_number(r, "calls_per_request", 0.0, kInf, "a number of calls >= 0", 1.0);
    return r.finish();
}

std::string money(double x, const std::string &currency) { return fmt::format("{:.2f} {}", x, currency); }

/// "price: gcp-e2-standard-2 at 0.067 USD/h (source, as of date)".
std::string price_note(const DevicePrice &p) {
    return fmt::format("price: {} at {:g} {}/h ({}, as of {})", p.device_class, p.price_per_hour, p.currency, p.source,
                       p.as_of);
}

}  // namespace

const DevicePrice *Pricing::find(std::string_view device_class) const {
    for (const auto &d : devices)
        if (d.device_class == device_class) return &d;
    return nullptr;
}

Result<Pricing> parse_pricing(std::string_view text, const std::string &file) {
    auto doc = parse_json(text, file);
    if (!doc) return std::unexpected(doc.error());
    Pricing p;
    p.file = file;
    ObjectReader r(*doc, file, "$");
    p.schema_version = r.integer("schema_version", 1, 1, 1);
    p.currency = r.required_string("currency");
    const json::array *devices = required_array(r, "devices", "device price objects");
    if (auto e = r.finish()) return std::unexpected(*e);
    std::set<std::string> classes;
    for (size_t i = 0; i < devices->size(); ++i) {
        DevicePrice d;
        const std::string dpath = fmt::format("$.devices[{}]", i);
        if (auto e = read_device((*devices)[i], file, dpath, d)) return std::unexpected(*e);
        if (!classes.insert(d.device_class).second)
            return fail(ErrorKind::BadInput, "{}: {}.class: duplicate device class \"{}\"", file, dpath, d.device_class);
        d.currency = p.currency;
        p.devices.push_back(std::move(d));
    }
    return p;
}

Result<Workload> parse_workload(std::string_view text, const std::string &file) {
    auto doc = parse_json(text, file);
    if (!doc) return std::unexpected(doc.error());
    Workload w;
    w.file = file;
    ObjectReader r(*doc, file, "$");
    w.name = r.required_string("name");
    w.description = r.string("description", "");
    w.device_class = r.required_string("device_class");
    w.kernel = r.string("kernel", "flash");
    w.memory_headroom_bytes = bounded_number(r, "memory_headroom_bytes", 0.0, kInf, "a number of bytes >= 0");
    w.restart_interval_hours = bounded_number(r, "restart_interval_hours", 0.0, kInf, "a number of hours > 0");
    if (r.ok() && !(w.restart_interval_hours > 0)) r.fail_at("restart_interval_hours", "expected a number of hours > 0");
    w.cost_budget_pct = bounded_number(r, "cost_budget_pct", 0.0, kInf, "a percentage >= 0", 5.0);
    const json::array *shapes = required_array(r, "shapes", "{\"case\", \"requests_per_second\", \"calls_per_request\"} objects");
    if (auto e = r.finish()) return std::unexpected(*e);
    for (size_t i = 0; i < shapes->size(); ++i) {
        WorkloadShape s;
        if (auto e = read_shape((*shapes)[i], file, fmt::format("$.shapes[{}]", i), s)) return std::unexpected(*e);
        w.shapes.push_back(std::move(s));
    }
    return w;
}

Result<std::optional<Pricing>> load_pricing(Store &store) {
    auto obj = store.get(kPricingKey);
    if (!obj) return std::unexpected(obj.error());
    if (!*obj) return std::optional<Pricing>();
    auto p = parse_pricing((*obj)->bytes, store.where(kPricingKey));
    if (!p) return std::unexpected(p.error());
    return std::optional<Pricing>(std::move(*p));
}

Result<std::vector<Workload>> load_workloads(Store &store) {
    auto keys = store.list(kWorkloadsPrefix);
    if (!keys) return std::unexpected(keys.error());
    std::vector<Workload> out;
    std::map<std::string, std::string> seen;  // name -> where
    for (const auto &key : *keys) {
        // Profiles sit directly in workloads/, one *.json each.
        if (!key.ends_with(".json") || key.find('/', kWorkloadsPrefix.size()) != std::string::npos) continue;
        auto obj = store.get(key);
        if (!obj) return std::unexpected(obj.error());
        if (!*obj) continue;  // removed while listing
        const std::string where = store.where(key);
        auto w = parse_workload((*obj)->bytes, where);
        if (!w) return std::unexpected(w.error());
        if (auto [it, fresh] = seen.emplace(w->name, where); !fresh)
            return fail(ErrorKind::BadInput, "{}: $.name: workload \"{}\" is also defined in {}", where, w->name, it->second);
        out.push_back(std::move(*w));
    }
    return out;
}

std::optional<Error> check_workload_refs(const Workload &w, const Pricing &pricing, const Suite &suite) {
    const std::string file = w.file.string();
    if (!pricing.find(w.device_class))
        return Error{ErrorKind::BadInput, fmt::format("{}: $.device_class: \"{}\" is not a device class of {}", file,
                                                      w.device_class, pricing.file.string())};
    for (const auto &s : w.shapes)
        if (!suite.find_case(s.case_id))
            return Error{ErrorKind::BadInput, fmt::format("{}: {}.case: \"{}\" is not a case of suite \"{}\" ({})", file,
                                                          s.json_path, s.case_id, suite.name, suite.file.string())};
    return std::nullopt;
}

double cost_per_million_tokens(double seconds_per_call, double tokens_per_call, double price_per_hour) {
    if (!(tokens_per_call > 0)) return std::numeric_limits<double>::quiet_NaN();
    return seconds_per_call / 3600.0 * price_per_hour / tokens_per_call * 1e6;
}

Result<WorkloadProjection> project_workload(const Workload &w,
                                            const std::map<std::string, double> &seconds_per_call_by_case,
                                            const DevicePrice &price) {
    WorkloadProjection p;
    p.workload = w.name;
    p.price = price;
    for (const auto &s : w.shapes) {
        const auto it = seconds_per_call_by_case.find(s.case_id);
        if (it == seconds_per_call_by_case.end() || !std::isfinite(it->second) || !(it->second > 0))
            return fail(ErrorKind::BadInput, "{}: {}.case: no measured time for case \"{}\", cannot project workload \"{}\"",
                        w.file.string(), s.json_path, s.case_id, w.name);
        ShapeProjection sp{s.case_id, s.calls_per_second(), it->second, 0.0, 0.0};
        sp.device_hours_per_month = sp.calls_per_second * sp.seconds_per_call * kHoursPerMonth;
        sp.monthly_cost = sp.device_hours_per_month * price.price_per_hour;
        p.device_hours_per_month += sp.device_hours_per_month;
        p.monthly_cost += sp.monthly_cost;
        p.shapes.push_back(std::move(sp));
    }
    return p;
}

CostChange compare_projection(const WorkloadProjection &current, const WorkloadProjection &baseline,
                              double budget_pct) {
    CostChange c;
    c.change = current.monthly_cost - baseline.monthly_cost;
    if (baseline.monthly_cost > 0) c.change_pct = 100.0 * c.change / baseline.monthly_cost;
    else c.change_pct = current.monthly_cost > 0 ? kInf : 0.0;
    c.within_budget = c.change_pct <= budget_pct;
    const std::string &cur = current.price.currency;
    c.reason = fmt::format("{}: monthly cost {} against {} baseline, {}{} ({:+.1f}%), {} the {:g}% budget; {}",
                           current.workload, money(current.monthly_cost, cur), money(baseline.monthly_cost, cur),
                           c.change >= 0 ? "+" : "", money(c.change, cur), c.change_pct,
                           c.within_budget ? "within" : "beyond", budget_pct, price_note(current.price));
    if (baseline.price.price_per_hour != current.price.price_per_hour || baseline.price.as_of != current.price.as_of)
        c.reason += fmt::format("; baseline {}", price_note(baseline.price));
    return c;
}

double leak_survival_hours(double leak_bytes_per_call, double calls_per_second, double headroom_bytes) {
    const double bytes_per_second = leak_bytes_per_call * calls_per_second;
    if (!(bytes_per_second > 0)) return kInf;
    return std::max(headroom_bytes, 0.0) / bytes_per_second / 3600.0;
}

Result<LeakVerdict> check_leak(const Workload &w, const std::map<std::string, double> &leak_bytes_per_call_by_case) {
    double bytes_per_second = 0.0;
    for (const auto &s : w.shapes) {
        const auto it = leak_bytes_per_call_by_case.find(s.case_id);
        if (it == leak_bytes_per_call_by_case.end() || !std::isfinite(it->second))
            return fail(ErrorKind::BadInput, "{}: {}.case: no measured leak for case \"{}\", cannot check workload \"{}\"",
                        w.file.string(), s.json_path, s.case_id, w.name);
        bytes_per_second += std::max(it->second, 0.0) * s.calls_per_second();
    }
    LeakVerdict v;
    v.leak_bytes_per_hour = bytes_per_second * 3600.0;
    v.survival_hours = leak_survival_hours(bytes_per_second, 1.0, w.memory_headroom_bytes);
    v.survives = v.survival_hours >= w.restart_interval_hours;
    if (std::isinf(v.survival_hours))
        v.reason = fmt::format("{}: no leak measured in its shapes", w.name);
    else
        v.reason = fmt::format("{}: leaks {:.0f} bytes/h, exhausting {:.0f} bytes of headroom in {:.1f} h, {} the {:g} h restart interval",
                               w.name, v.leak_bytes_per_hour, w.memory_headroom_bytes, v.survival_hours,
                               v.survives ? "after" : "before", w.restart_interval_hours);
    return v;
}

}  // namespace attngate
