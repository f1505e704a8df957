// attngate.toml, read with toml++ and applied to the parsed command line.
#include "config_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "common.hpp"
#include "options.hpp"
#include "report/escape.hpp"
#include "report/report_files.hpp"

namespace attngate::cli {

namespace fs = std::filesystem;

namespace {

enum class Type { String, StringList, Number, Bool };

/// What a string value is, beyond its text.
enum class PathRule {
    None,           ///< plain text
    Path,           ///< a path, relative to the file's directory
    ExistingFile,   ///< a path that must name a file when it is used
    ExistingDir,    ///< a path that must name a directory
    SuiteRef,       ///< a suite file (a path) or a suite name (no '/', no ".json")
    StoreLocation,  ///< an http(s):// URL, or a directory path
};

struct Key {
    std::string key;
    std::string flag;  ///< the flag it fills; empty for `suites`, which only suite lookup reads
    Type type;
    PathRule rule = PathRule::None;
    std::optional<CLI::Validator> value = std::nullopt;  ///< what each value must be: the flag's own check, run on load
};

const std::vector<Key> &keys() {
    static const std::vector<Key> all = [] {
        std::vector<Key> k = {
            {"suite", "--suite", Type::String, PathRule::SuiteRef},
            {"suites", "", Type::String, PathRule::ExistingDir},
            {"store", "--store", Type::String, PathRule::StoreLocation},
            {"baselines", "--baselines", Type::String, PathRule::Path},
            {"plugins", "--plugin", Type::StringList, PathRule::ExistingFile},
            {"adapters", "--adapter", Type::StringList},
            {"remotes", "--remote", Type::StringList},
            {"kernels", "--kernel", Type::StringList},
            {"cases", "--case", Type::StringList},
            {"checks", "--checks", Type::StringList, PathRule::None, check_name()},
            {"threshold_pct", "--threshold-pct", Type::Number, PathRule::None, threshold_pct_value()},
            {"alpha", "--alpha", Type::Number, PathRule::None, alpha_value()},
            {"strict", "--strict", Type::Bool},
            {"machine", "--machine", Type::String, PathRule::None, non_empty_name()},
            {"device_class", "--device-class", Type::String, PathRule::None, non_empty_name()},
            {"timeout", "--timeout", Type::Number, PathRule::None, timeout_value()},
            {"lockfiles", "--lockfile", Type::StringList, PathRule::ExistingFile},
        };
        for (const auto &f : report_formats())
            k.push_back({"report." + std::string(f.name), "--" + std::string(f.name), Type::String, PathRule::Path});
        return k;
    }();
    return all;
}

const Key *find_key(std::string_view name) {
    for (const auto &k : keys())
        if (k.key == name) return &k;
    return nullptr;
}

std::string known_keys() {
    std::vector<std::string> names;
    for (const auto &k : keys()) names.push_back(k.key);
    return fmt::format("{}", fmt::join(names, ", "));
}

std::string type_name(Type t) {
    switch (t) {
    case Type::String: return "a string";
    case Type::StringList: return "an array of strings";
    case Type::Number: return "a number";
    case Type::Bool: return "true or false";
    }
    return "?";
}

std::string node_type_name(const toml::node &n) {
    switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer:
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
    }
}

std::string place(const fs::path &file, const toml::source_region &at) {
    return fmt::format("{}:{}", file.string(), at.begin.line);
}

/// A path value made absolute from the file's directory (a URL store stays as it is).
std::string resolve(const Key &k, const std::string &text, const fs::path &dir) {
    switch (k.rule) {
    case PathRule::None: return text;
    case PathRule::SuiteRef:
        if (text.find('/') == std::string::npos && !text.ends_with(".json")) return text;  // a name
        break;
    case PathRule::StoreLocation:
        if (text.find("://") != std::string::npos) return text;
        break;
    default: break;
    }
    std::string path = (dir / text).lexically_normal().string();
    if (path.size() > 1 && path.ends_with('/')) path.pop_back();  // "." -> "/repo", not "/repo/"
    return path;
}

/// The value's arguments, or why it has the wrong type.
Result<std::vector<std::string>> arguments(const Key &k, const toml::node &n, const fs::path &file) {
    const std::string at = place(file, n.source());
    const auto wrong = [&] {
        return fail(ErrorKind::BadInput, "{}: {}: expected {}, got {}", at, k.key, type_name(k.type), node_type_name(n));
    };
    switch (k.type) {
    case Type::String:
        if (const auto s = n.value<std::string>(); s && n.is_string()) return std::vector<std::string>{*s};
        return wrong();
    case Type::Number:
        if (!n.is_number()) return wrong();
        return std::vector<std::string>{fmt::format("{}", *n.value<double>())};
    case Type::Bool:
        if (!n.is_boolean()) return wrong();
        return std::vector<std::string>{*n.value<bool>() ? "true" : "false"};
    case Type::StringList: {
        const toml::array *a = n.as_array();
        if (!a) return wrong();
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const toml::node &e = *a->get(i);
            if (!e.is_string())
                return fail(ErrorKind::BadInput, "{}: {}[{}]: expected a string, got {}", place(file, e.source()), k.key, i,
                            node_type_name(e));
            out.push_back(*e.value<std::string>());
        }
        return out;
    }
    }
    return wrong();
}

Result<void> add_value(ConfigFile &cfg, const std::string &name, const toml::node &n) {
    const std::string at = place(cfg.path, n.source());
    const Key *k = find_key(name);
    if (!k) {
        // `threshold_pct = 5` below a [report] header is read as report.threshold_pct.
        const size_t dot = name.rfind('.');
        const std::string key = dot == std::string::npos ? "" : name.substr(dot + 1), table = name.substr(0, dot);
        if (!key.empty() && find_key(key))
            return fail(ErrorKind::BadInput, "{}: unknown key \"{}\": {} is a top-level key, and a key below a [{}] header belongs to that table; move it above [{}]",
                        at, terminal_text(name), terminal_text(key), terminal_text(table), terminal_text(table));
        return fail(ErrorKind::BadInput, "{}: unknown key \"{}\" (known keys: {})", at, terminal_text(name), known_keys());
    }
    auto args = arguments(*k, n, cfg.path);
    if (!args) return std::unexpected(args.error());
    if (k->value)
        for (std::string a : *args)  // a copy: a check may rewrite its text
            if (const std::string wrong = (*k->value)(a); !wrong.empty()) return fail(ErrorKind::BadInput, "{}: {}: {}", at, k->key, wrong);
    const fs::path dir = cfg.path.parent_path();
    for (auto &a : *args) a = resolve(*k, a, dir);
    if (k->rule == PathRule::ExistingDir) {
        std::error_code ec;
        if (!fs::is_directory(args->front(), ec)) return fail(ErrorKind::BadInput, "{}: {}: {} is not a directory", at, k->key, args->front());
    }
    cfg.values.push_back({k->key, std::move(*args), at});
    return {};
}

/// A file the value names must be there when the value is used.
Result<void> check_files(const Key &k, const ConfigValue &v) {
    const bool must_exist = k.rule == PathRule::ExistingFile || (k.rule == PathRule::SuiteRef && v.args.front().starts_with("/"));
    if (!must_exist) return {};
    for (const auto &a : v.args) {
        std::error_code ec;
        if (!fs::is_regular_file(a, ec)) return fail(ErrorKind::BadInput, "{}: {}: no such file {}", v.where, k.key, a);
    }
    return {};
}

std::string joined(const std::vector<std::string> &args) { return fmt::format("{}", fmt::join(args, ", ")); }

}  // namespace

const ConfigValue *ConfigFile::find(std::string_view key) const {
    for (const auto &v : values)
        if (v.key == key) return &v;
    return nullptr;
}

std::optional<fs::path> find_config(const fs::path &start) {
    std::error_code ec;
    fs::path dir = fs::absolute(start, ec);
    if (ec) return std::nullopt;
    for (;; dir = dir.parent_path()) {
        const fs::path candidate = dir / kConfigName;
        if (fs::is_regular_file(candidate, ec)) return candidate;  // an unreadable directory: look further up
        if (dir.parent_path() == dir) return std::nullopt;
    }
}

Result<ConfigFile> load_config(const fs::path &file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return fail(ErrorKind::BadInput, "{}: no such configuration file", file.string());
    ConfigFile cfg;
    cfg.path = fs::absolute(file, ec).lexically_normal();
    toml::table root;
    try {
        root = toml::parse_file(cfg.path.string());
    } catch (const toml::parse_error &e) {
        const std::string what(e.description());
        // toml++ says of `suite = "mine` (no closing quote) only that the line's end is a control character.
        const char *hint = what.find("parsing string") != std::string::npos && what.find("control characters") != std::string::npos
                               ? " (a string whose closing quote is missing?)"
                               : "";
        return fail(ErrorKind::BadInput, "{}:{}:{}: {}{}", cfg.path.string(), e.source().begin.line, e.source().begin.column,
                    terminal_text(what), hint);
    }
    for (const auto &[name, node] : root) {
        const std::string key(name.str());
        if (key == "report" && node.is_table()) {
            for (const auto &[sub, value] : *node.as_table())
                if (auto r = add_value(cfg, "report." + std::string(sub.str()), value); !r) return std::unexpected(r.error());
            continue;
        }
        if (auto r = add_value(cfg, key, node); !r) return std::unexpected(r.error());
    }
    return cfg;
}

Result<std::optional<ConfigFile>> config_for(const std::vector<std::string> &argv) {
    std::optional<fs::path> file;
    for (size_t i = 0; i < argv.size(); ++i) {
        if (argv[i] == "--") break;
        if (argv[i] == "--config") {
            if (i + 1 >= argv.size()) return fail(ErrorKind::Usage, "--config: expected a file");
            file = argv[i + 1];
        } else if (argv[i].starts_with("--config=")) {
            file = argv[i].substr(9);
        }
    }
    const char *from = file ? "--config" : nullptr;  // what named the file, when it was named
    if (!file)
        if (const char *env = std::getenv("ATTNGATE_CONFIG"); env && *env) file = env, from = "$ATTNGATE_CONFIG";
    if (!file) file = find_config(fs::current_path());
    if (!file) return std::optional<ConfigFile>{};
    auto cfg = load_config(*file);
    if (!cfg && from && !fs::exists(*file))
        return fail(cfg.error().kind, "{} names {}, which does not exist", from, file->string());
    if (!cfg) return std::unexpected(cfg.error());
    return std::optional<ConfigFile>{std::move(*cfg)};
}

std::vector<std::string> config_command_argv(std::vector<std::string> argv) {
    for (size_t i = 1; i < argv.size(); ++i) {
        if (argv[i] == "--config") {
            ++i;
            continue;
        }
        if (argv[i].starts_with("-")) continue;
        const bool help = i + 1 < argv.size() && (argv[i + 1] == "-h" || argv[i + 1] == "--help");
        if (argv[i] == "config" && i + 1 < argv.size() && argv[i + 1] != "--" && !help) argv.insert(argv.begin() + i + 1, "--");
        break;
    }
    return argv;
}

void relax_required(CLI::App &app, const ConfigFile &config) {
    for (CLI::App *sub : app.get_subcommands([](CLI::App *) { return true; })) {
        for (const auto &v : config.values)
            if (const Key *k = find_key(v.key); k && !k->flag.empty())
                if (CLI::Option *o = sub->get_option_no_throw(k->flag)) o->required(false);
        relax_required(*sub, config);
    }
}

namespace {

/// Whether the command line names a store with `flag`: `--store "$ATTNGATE_STORE"` with the
/// variable unset names none, and the file's store stands.
bool store_flag_given(CLI::App *cmd, const char *flag) {
    const CLI::Option *o = cmd->get_option_no_throw(flag);
    return o && o->count() > 0 && !o->as<std::string>().empty();
}

/// Why the file's key is not used, or empty. [report]'s files are reports/results.json's: a run
/// sent elsewhere, or `ab`, leaves them. `store` = `baselines`: a flag, $ATTNGATE_STORE, then `store` win.
std::string why_not_used(const Key &k, CLI::App *cmd, const ConfigFile *config) {
    const CLI::Option *out = cmd->get_option_no_throw("--out");
    const fs::path repo_results = config ? (config->path.parent_path() / "reports/results.json").lexically_normal() : "";
    if (k.key.starts_with("report.") && out && out->count() > 0 && fs::absolute(out->as<std::string>()).lexically_normal() != repo_results)
        return "not used: --out on the command line sends this run's results elsewhere";
    if (k.key.starts_with("report.") && out && out->get_default_str() != "reports/results.json")
        return fmt::format("not used: {}'s results go to {}", cmd->get_name(), out->get_default_str());
    if (k.key != "store" && k.key != "baselines") return {};
    for (const char *flag : {"--store", "--baselines"})
        if (store_flag_given(cmd, flag)) return fmt::format("not used: flag {} wins", flag);
    if (const char *env = std::getenv("ATTNGATE_STORE"); env && *env) return "not used: $ATTNGATE_STORE wins";
    if (const ConfigValue *store = config ? config->find("store") : nullptr;
        k.key == "baselines" && store && cmd->get_option_no_throw("--store"))
        return fmt::format("not used: store ({}) wins", store->where);
    return {};
}

}  // namespace

Result<std::vector<Setting>> apply_config(CLI::App *cmd, const ConfigFile *config, bool report_missing) {
    std::vector<Setting> out;
    std::vector<FileSetValue> from_file;
    std::map<std::string, std::string, std::less<>> taken;  // read before the file fills any flag
    for (const Key &k : keys())
        if (std::string why = why_not_used(k, cmd, config); !why.empty()) taken[k.key] = std::move(why);
    // [report] is for the commands that write the report table (run, report, merge; see above):
    // bisect's own --markdown and --html answer another question and would replace them.
    const bool report_table = std::all_of(report_formats().begin(), report_formats().end(), [&](const ReportFormat &f) {
        return cmd->get_option_no_throw("--" + std::string(f.name)) != nullptr;
    });
    for (const Key &k : keys()) {
        const ConfigValue *v = config ? config->find(k.key) : nullptr;
        if (k.flag.empty()) {  // `suites`: read by suite lookup, not a flag
            if (v) out.push_back({k.key, "", joined(v->args), v->where});
            continue;
        }
        CLI::Option *o = k.key.starts_with("report.") && !report_table ? nullptr : cmd->get_option_no_throw(k.flag);
        if (!o) {
            if (v) out.push_back({k.key, k.flag, joined(v->args), v->where + fmt::format(", not used by {}", cmd->get_name())});
            continue;
        }
        if (k.key == "store" && o->count() > 0 && o->as<std::string>().empty()) o->clear();  // --store "" names no store
        if (o->count() > 0) {
            out.push_back({k.key, k.flag, joined(o->results()), "flag " + k.flag});
            continue;
        }
        if (const auto t = taken.find(k.key); v && t != taken.end()) {
            out.push_back({k.key, k.flag, joined(v->args), fmt::format("{}, {}", v->where, t->second)});
            continue;
        }
        if (!v) {
            std::string d = o->get_default_str();
            if (d.empty() && o->get_expected_min() == 0) d = "false";  // a flag not given
            out.push_back({k.key, k.flag, d, d.empty() ? "unset" : "default"});
            continue;
        }
        std::string where = v->where;
        if (auto r = check_files(k, *v); !r) {
            if (!report_missing) return std::unexpected(r.error());
            where += ", but: " + r.error().message.substr(v->where.size() + 2);
        }
        try {
            for (const auto &a : v->args) o->add_result(a);
            o->run_callback();
        } catch (const CLI::Error &e) {
            return fail(ErrorKind::BadInput, "{}: {}: {}", v->where, k.key, e.what());
        }
        out.push_back({k.key, k.flag, joined(v->args), where});
        for (const auto &a : v->args) from_file.push_back({k.flag, a, fmt::format("{} ({})", v->where, k.key)});
    }
    // The store $ATTNGATE_STORE names, where no flag names one: shown beside the keys it replaces.
    if (const char *env = std::getenv("ATTNGATE_STORE");
        env && *env && cmd->get_option_no_throw("--store") && !store_flag_given(cmd, "--store") && !store_flag_given(cmd, "--baselines"))
        out.push_back({"store", "--store", env, "$ATTNGATE_STORE"});
    set_file_set_values(std::move(from_file));
    // An output left at its default under reports/ ("reports/results.json") is the repository's,
    // as [report]'s paths are: relative to the file, so a run from a subdirectory (or `baseline
    // update` after it) finds the same results the reports were written from.
    if (config)
        for (const char *flag : {"--out", "--results"}) {
            CLI::Option *o = cmd->get_option_no_throw(flag);
            if (!o || o->count() > 0 || !o->get_default_str().starts_with("reports/")) continue;
            const std::string path = (config->path.parent_path() / o->get_default_str()).lexically_normal().string();
            o->add_result(path);
            o->run_callback();
            out.push_back({flag + 2, flag, path, fmt::format("default, beside {}", config->path.string())});
        }
    return out;
}

std::optional<fs::path> config_suites_dir(const ConfigFile *config) {
    if (!config) return std::nullopt;
    if (const ConfigValue *v = config->find("suites")) return fs::path(v->args.front());
    return std::nullopt;
}

}  // namespace attngate::cli
