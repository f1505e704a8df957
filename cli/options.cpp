// The shared option groups.
#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "run/check_requests.hpp"
#include "run/run.hpp"
#include "store/layered_store.hpp"

namespace attngate::cli {

void add_suite_option(CLI::App *cmd, std::string &suite) {
    cmd->add_option("--suite", suite, "suite file, or a name: NAME.json in attngate.toml's `suites`, ./suites or the installed suites")->required();
}

CLI::Option *add_out_option(CLI::App *cmd, std::string &path, const std::string &what) {
    return cmd->add_option("-o,--out", path, what);
}

void add_kernel_source_options(CLI::App *cmd, KernelSources &sources) {
    cmd->add_option("--plugin", sources.plugins, "kernel plugin .so to load (repeatable); its kernels run every case they support");
    cmd->add_option("--adapter", sources.adapters,
                    "start a kernel adapter: a command line that serves docs/protocol.md when given --http HOST:PORT "
                    "(repeatable), e.g. \".venv/jax-new/bin/python kernels/jax/adapter.py\"");
    cmd->add_option("--remote", sources.remotes,
                    "an adapter already serving at this URL (repeatable); its bearer token is read from $ATTNGATE_ADAPTER_TOKEN");
}

void add_filter_options(CLI::App *cmd, PlanFilter &filter) {
    cmd->add_option("--kernel", filter.kernels, "only these kernels (label or name, repeatable; any loaded kernel)");
    cmd->add_option("--case", filter.cases, "only these cases (repeatable)");
}

void add_store_options(CLI::App *cmd, StoreArgs &args) {
    cmd->add_option("--store", args.store,
                    "where goldens, baselines, pricing, workloads and history live: an http(s):// URL of a WebDAV server "
                    "(token from $ATTNGATE_STORE_TOKEN) or a directory; default $ATTNGATE_STORE, else --baselines");
    args.baselines_option = cmd->add_option("--baselines", args.baselines, "baselines directory (a directory store)")->capture_default_str();
}

namespace {

/// The store at `location`; an existing file that is not a directory is a usage error
/// naming `what` gave it, before anything tries to make folders in it or read from it.
/// `named`: given on purpose (a flag, the environment, the file), not the default name.
Result<std::unique_ptr<Store>> open_store_from(const std::string &location, std::string_view what, StoreUse use, bool named = true) {
    std::error_code ec;
    const bool local = location.find("://") == std::string::npos;
    if (local && std::filesystem::exists(location, ec) && !std::filesystem::is_directory(location, ec))
        return fail(ErrorKind::Usage, "{} {}: expected a directory (where goldens and baselines live), found a file", what, location);
    // A store named on purpose that is not there is a typo far more often than an empty store:
    // a command that only reads would judge against nothing (the installed data alone).
    if (local && use == StoreUse::Read && named && !std::filesystem::exists(location, ec))
        return fail(ErrorKind::Usage, "{} {}: no such directory (the store, where goldens and baselines live); `attngate golden "
                    "generate` or `attngate baseline update` makes a new one", what, location);
    return open_store_over_installed(location);
}

}  // namespace

Result<std::unique_ptr<Store>> open_store(const StoreArgs &args, StoreUse use) {
    if (!args.store.empty()) return open_store_from(args.store, "--store", use);
    if (args.baselines_option && args.baselines_option->count() > 0) return open_store_from(args.baselines, "--baselines", use);
    if (const char *env = std::getenv("ATTNGATE_STORE"); env && *env) return open_store_from(env, "$ATTNGATE_STORE", use);
    return open_store_from(args.baselines, "--baselines (default)", use, /*named=*/false);
}

void add_policy_options(CLI::App *cmd, DecisionPolicy &policy) {
    // The percent becomes the policy's fraction here, once.
    cmd->add_option_function<double>("--threshold-pct", [&policy](double pct) { policy.threshold = pct / 100.0; },
                                     "practical threshold on the time ratio, in percent")
        ->check(threshold_pct_value())
        ->default_str(fmt::format("{:g}", 100.0 * policy.threshold));
    cmd->add_option("--alpha", policy.alpha, "significance after Benjamini-Hochberg")->check(alpha_value())->capture_default_str();
}

void add_perf_metric_option(CLI::App *cmd, const std::string &flag, PerfMetric &metric, const std::string &what) {
    // The name becomes the enum's number, which CLI11 stores into `metric` itself; any other
    // text (a number included) is a usage error naming the two metrics.
    const CLI::Validator to_enum(
        [](std::string &text) -> std::string {
            static const std::map<std::string, PerfMetric> names{{"time", PerfMetric::Time}, {"instructions", PerfMetric::Instructions}};
            const auto it = names.find(text);
            if (it == names.end()) return fmt::format("expected time or instructions, got \"{}\"", text);
            text = std::to_string(static_cast<int>(it->second));
            return {};
        },
        "{time,instructions}");
    cmd->add_option(flag, metric, what)->transform(to_enum)->type_name("METRIC")->default_str("time");
}

void add_shard_option(CLI::App *cmd, std::optional<ShardSpec> &shard, const std::string &what) {
    cmd->add_option_function<std::string>(
           "--shard",
           [&shard](const std::string &text) {
               auto spec = parse_shard(text);
               if (!spec) throw CLI::ValidationError(spec.error().message);  // it names --shard and the text
               shard = *spec;
           },
           what)
        ->type_name("I/N");
}

CLI::Validator finite_number(double low, double high, bool low_closed) {
    const std::string range = fmt::format("{}{}, {}]", low_closed ? "[" : "(", low, high);
    return CLI::Validator(
        [=](std::string &text) -> std::string {
            double x = 0;
            try {
                size_t used = 0;
                x = std::stod(text, &used);
                if (used != text.size()) return fmt::format("expected a number in {}, got \"{}\"", range, text);
            } catch (const std::exception &) {
                return fmt::format("expected a number in {}, got \"{}\"", range, text);
            }
            if (!std::isfinite(x) || x > high || x < low || (x == low && !low_closed))
                return fmt::format("expected a finite number in {}, got {}", range, text);
            return {};
        },
        "NUMBER in " + range);
}

CLI::Validator threshold_pct_value() { return finite_number(0, 100); }
CLI::Validator alpha_value() { return finite_number(0, 0.5); }
CLI::Validator timeout_value() { return finite_number(0, 86400); }

CLI::Validator non_empty_name() {
    return CLI::Validator(
        [](std::string &text) -> std::string {
            return text.empty() ? "an empty name (leave it out for the default)" : std::string();
        },
        "NAME");
}

namespace {

std::optional<Error> checks_apart_said(const std::string &value, const std::string &origin) {
    std::vector<std::string> names;
    for (size_t at = 0; at <= value.size();) {
        const size_t end = std::min(value.find(", ", at), value.size());
        names.push_back(value.substr(at, end - at));
        at = end + 2;
    }
    const std::string why = checks_apart(names);
    if (why.empty()) return std::nullopt;
    if (origin.starts_with("flag ")) return Error{ErrorKind::Usage, fmt::format("--checks: {}", why)};
    return Error{ErrorKind::BadInput, fmt::format("{}: checks: {}", origin, why)};
}

}  // namespace

std::optional<Error> settings_apart(const CLI::App &cmd, const std::vector<Setting> &settings) {
    if (cmd.get_name() != "run") return std::nullopt;  // run's check names; bisect's and baseline's are others
    for (const auto &s : settings)
        if (s.key == "checks")
            if (auto apart = checks_apart_said(s.value, s.origin)) return apart;
    return std::nullopt;
}

CLI::Validator check_name() {
    return CLI::Validator(
        [](std::string &text) -> std::string { return not_requestable(text); },
        "CHECK");
}

}  // namespace attngate::cli
