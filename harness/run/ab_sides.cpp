// A/B sides: spawned builds and resident backends.
#include "run/ab_sides.hpp"

#include <algorithm>

#include "backend/observe.hpp"
#include "io/files.hpp"
#include "io/process.hpp"
#include "io/json_io.hpp"
#include "io/npy.hpp"
#include "results/fingerprint.hpp"
#include "run/run.hpp"
#include "stats/stats.hpp"

namespace attngate {

std::string ab_command(const std::string &side) {
    std::error_code ec;
    if (std::filesystem::is_directory(side, ec)) return (std::filesystem::path(side) / "attngate").string();
    return side;
}

Result<void> check_build_command(const std::string &side, const std::string &flag) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string cmd = ab_command(side);
    if (fs::is_directory(side, ec) && !fs::exists(cmd, ec))
        return fail(ErrorKind::Usage, "{} {}: a directory without an attngate binary in it ({} does not exist)", flag, side, cmd);
    std::string program = cmd;
    if (!fs::exists(cmd, ec)) {
        auto words = split_command(cmd);
        if (!words) return fail(ErrorKind::Usage, "{} {}: {}", flag, side, words.error().message);
        program = words->front();
    }
    const fs::path found = find_on_path(program);
    if (!found.empty() && fs::is_regular_file(found, ec)) return {};
    if (program.find('/') != std::string::npos)
        return fail(ErrorKind::Usage, "{} {}: {} {}", flag, side, program, fs::exists(program, ec) ? "is not an executable file" : "does not exist");
    if (fs::exists(program, ec))  // a command line's first word without a slash is looked up on PATH only
        return fail(ErrorKind::Usage, "{} {}: \"{}\" is not a command on PATH; for the file here, give ./{}", flag, side, program, program);
    return fail(ErrorKind::Usage, "{} {}: \"{}\" is neither a file nor a command on PATH (give an attngate binary, a build directory "
                "holding one, or a command line)", flag, side, program);
}

namespace {

/// Repetitions a server times for one sample of one row; only the last counts. A process
/// that sat idle while the other side ran is up to 30% slower in its first repetition,
/// even after 20 ms of untimed calls (measured on the smoke suite), and by the second it
/// is not: so the side that went second in a pair was the slower one.
constexpr int kRowRepetitions = 2;

class BuildSide final : public AbSide {
public:
    BuildSide(std::vector<std::string> argv, std::string line, std::vector<std::string> time_args, std::vector<std::string> env_args)
        : argv_(std::move(argv)), line_(std::move(line)), time_args_(std::move(time_args)), env_args_(std::move(env_args)) {}

    std::string describe() const override { return line_; }

    Result<json::object> fingerprint(double timeout_s) override {
        std::vector<std::string> argv = argv_;
        argv.insert(argv.end(), {"env", "--json"});
        argv.insert(argv.end(), env_args_.begin(), env_args_.end());
        const auto out = dir_.path / "env.json";
        const std::string who = fmt::format("\"{}\" (env --json)", line_);
        if (auto r = spawn(argv, dir_.path / "env-stderr.txt", timeout_s, who, {}, out); !r) return std::unexpected(r.error());
        auto text = read_file(out);
        if (!text) return std::unexpected(text.error());
        return parse_fingerprint(*text, who);
    }

    Result<std::vector<AbLabel>> rows(const AbRoundOptions &o) override {
        if (auto s = start_server(o.timeout_s); !s) return std::unexpected(s.error());
        return rows_;
    }

    Result<double> time_row(const AbLabel &label, const AbRoundOptions &o) override {
        const auto it = std::find(rows_.begin(), rows_.end(), label);
        if (!server_ || it == rows_.end()) return AbSide::time_row(label, o);
        auto got = ask(json::array{it - rows_.begin()}, kRowRepetitions, o);
        if (!got) return std::unexpected(got.error());
        return got->at(0).back();
    }

    Result<std::map<AbLabel, double>> round(const AbRoundOptions &o) override {
        if (auto s = start_server(o.timeout_s); !s) return std::unexpected(s.error());
        if (server_) {
            json::array all;
            for (size_t i = 0; i < rows_.size(); ++i) all.push_back(i);
            auto got = ask(std::move(all), o.samples, o);
            if (!got) return std::unexpected(got.error());
            std::map<AbLabel, double> times;
            for (size_t i = 0; i < rows_.size(); ++i) times[rows_[i]] = median(got->at(i));
            return times;
        }
        const auto out = dir_.path / "times.json";
        if (auto r = run_time({"--repetitions", std::to_string(o.samples), "--min-time", fmt::format("{}", o.min_time_s), "--out", out.string()},
                              o.timeout_s);
            !r)
            return std::unexpected(r.error());
        auto doc = load_json_file(out);
        if (!doc) return fail(ErrorKind::Infra, "\"{}\" wrote no timing file: {}", line_, doc.error().message);
        std::map<AbLabel, double> times;
        if (!doc->is_array()) return fail(ErrorKind::Infra, "{}: $: expected an array of timings from \"{}\"", out.string(), line_);
        for (size_t i = 0; i < doc->get_array().size(); ++i) {
            ObjectReader r(doc->get_array()[i], out.string(), fmt::format("$[{}]", i));
            const std::string c = r.required_string("case"), k = r.required_string("kernel");
            const json::value *s = r.raw("samples_s");
            std::vector<double> samples;
            if (r.ok() && (!s || !s->is_array())) r.fail_at("samples_s", "expected an array of seconds");
            else if (s)
                for (const auto &x : s->get_array()) {
                    if (!x.is_number() || !(x.to_number<double>() > 0)) {
                        r.fail_at("samples_s", "expected positive numbers");
                        break;
                    }
                    samples.push_back(x.to_number<double>());
                }
            if (auto e = r.finish()) return fail(ErrorKind::Infra, "\"{}\" wrote unexpected timing JSON: {}", line_, e->message);
            // A fresh process per round is colder than a long run: the median of a few
            // samples keeps one cold sample from deciding the pair.
            if (!samples.empty()) times[{c, k}] = median(samples);
        }
        return times;
    }

    Result<std::map<AbLabel, AbOutput>> outputs(const AbRoundOptions &o) override {
        const auto dir = dir_.path / "outputs";
        std::vector<std::string> args = {"--repetitions", "1", "--min-time", "0.0001", "--outputs", dir.string(), "--out",
                                         (dir_.path / "once.json").string()};
        if (o.memory) args.push_back("--memory");
        auto ran = run_time(args, o.timeout_s);
        const bool without_memory = !ran && o.memory && ran.error().message.find("--memory") != std::string::npos;
        if (without_memory) {  // a build older than `time --memory` ("The following argument was not expected")
            args.pop_back();
            ran = run_time(args, o.timeout_s);
        }
        if (!ran) return std::unexpected(ran.error());
        auto out = read_outputs(dir, line_);
        if (out && without_memory)
            for (auto &[label, got] : *out) got.memory_unavailable = "its build is older than `attngate time --memory`";
        return out;
    }

    static Result<std::map<AbLabel, AbOutput>> read_outputs(const std::filesystem::path &dir, const std::string &who) {
        const auto index_path = dir / "index.json";
        auto index = load_json_file(index_path);
        if (!index) return fail(ErrorKind::Infra, "\"{}\" wrote no outputs index: {}", who, index.error().message);
        if (!index->is_array()) return fail(ErrorKind::Infra, "{}: $: expected an array", index_path.string());
        std::map<AbLabel, AbOutput> out;
        for (size_t i = 0; i < index->get_array().size(); ++i) {
            ObjectReader r(index->get_array()[i], index_path.string(), fmt::format("$[{}]", i));
            const std::string c = r.required_string("case"), k = r.required_string("kernel");
            const std::string file = r.string("file", ""), error = r.string("error", "");
            AbOutput o;
            if (const json::value *v = r.raw("compile_s"); v && v->is_number()) o.compile_s = v->to_number<double>();
            o.rounding.output = r.boolean("rounds_output", false);
            o.rounding.probabilities = r.boolean("rounds_probabilities", false);
            if (const json::value *m = r.raw("memory")) {
                auto memory = memory_from_json(*m, index_path.string(), r.path_of("memory"));
                if (!memory) return std::unexpected(memory.error());
                o.memory = std::move(*memory);
            }
            o.workspace_growth = static_cast<uint32_t>(r.integer("workspace_growth", 0, 0, ATTNGATE_WORKSPACE_QUADRATIC));
            if (auto e = r.finish()) return std::unexpected(*e);
            o.error = error;
            if (error.empty()) {
                if (file.empty() || file.find('/') != std::string::npos)
                    return fail(ErrorKind::Infra, "{}: $[{}].file: expected a file name in the same directory", index_path.string(), i);
                auto bytes = read_file(dir / file);
                if (!bytes) return std::unexpected(bytes.error());
                auto npy = parse_npy(*bytes, (dir / file).string());
                if (!npy) return std::unexpected(npy.error());
                if (npy->descr != "<f4") return fail(ErrorKind::Infra, "{}: expected float32", (dir / file).string());
                const auto v = npy->as<float>();
                o.values.assign(v.begin(), v.end());
            }
            out[{c, k}] = std::move(o);
        }
        return out;
    }

private:
    /// Starts `<command> time --serve` once and reads its rows; a build that does not know
    /// --serve leaves the side spawning `time` per round.
    Result<void> start_server(double timeout_s) {
        if (server_ || legacy_) return {};
        std::vector<std::string> argv = argv_;
        argv.insert(argv.end(), {"time", "--serve"});
        argv.insert(argv.end(), time_args_.begin(), time_args_.end());
        auto server = Coprocess::start(argv, dir_.path / "server-stderr.txt", fmt::format("\"{}\" (time --serve)", line_));
        if (!server) return std::unexpected(server.error());
        auto hello = (*server)->read_line(timeout_s);
        if (!hello) {
            if ((*server)->stderr_tail().find("--serve") == std::string::npos) return std::unexpected(hello.error());
            legacy_ = true;  // "The following argument was not expected: --serve"
            return {};
        }
        auto doc = parse_json(*hello, line_ + " (time --serve)");
        if (!doc) return fail(ErrorKind::Infra, "{}", doc.error().message);
        ObjectReader r(*doc, line_ + " (time --serve)", "$");
        const json::value *rows = r.raw("rows");
        if (r.ok() && (!rows || !rows->is_array())) r.fail_at("rows", "expected an array of [case, kernel]");
        std::vector<AbLabel> labels;
        if (r.ok())
            for (const auto &x : rows->get_array()) {
                if (!x.is_array() || x.get_array().size() != 2 || !x.get_array()[0].is_string() || !x.get_array()[1].is_string()) {
                    r.fail_at("rows", "expected an array of [case, kernel]");
                    break;
                }
                labels.emplace_back(std::string(x.get_array()[0].get_string()), std::string(x.get_array()[1].get_string()));
            }
        if (auto e = r.finish()) return fail(ErrorKind::Infra, "{}", e->message);
        server_ = std::move(*server);
        rows_ = std::move(labels);
        return {};
    }

    /// The server's samples of these rows, in order.
    Result<std::vector<std::vector<double>>> ask(json::array rows, int repetitions, const AbRoundOptions &o) {
        const size_t n = rows.size();
        const json::object request{{"rows", std::move(rows)}, {"repetitions", repetitions}, {"min_time_s", o.min_time_s}};
        auto answer = server_->request(json::serialize(request), o.timeout_s);
        if (!answer) return std::unexpected(answer.error());
        const std::string who = line_ + " (time --serve)";
        auto doc = parse_json(*answer, who);
        if (!doc) return fail(ErrorKind::Infra, "{}", doc.error().message);
        ObjectReader r(*doc, who, "$");
        const std::string error = r.string("error", "");
        const json::value *samples = r.raw("samples_s");
        std::vector<std::vector<double>> out;
        if (r.ok() && error.empty()) {
            if (!samples || !samples->is_array() || samples->get_array().size() != n) r.fail_at("samples_s", fmt::format("expected {} arrays", n));
            else
                for (const auto &row : samples->get_array()) {
                    out.emplace_back();
                    for (const auto &x : row.is_array() ? row.get_array() : json::array{})
                        if (x.is_number() && x.to_number<double>() > 0) out.back().push_back(x.to_number<double>());
                    if (out.back().empty() || out.back().size() != (row.is_array() ? row.get_array().size() : 0)) {
                        r.fail_at("samples_s", "expected arrays of positive seconds");
                        break;
                    }
                }
        }
        if (auto e = r.finish()) return fail(ErrorKind::Infra, "{}", e->message);
        if (!error.empty()) return fail(ErrorKind::Infra, "\"{}\" could not time: {}", line_, error);
        return out;
    }

    Result<void> run_time(std::vector<std::string> extra, double timeout_s) {
        std::vector<std::string> argv = argv_;
        argv.push_back("time");
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.insert(argv.end(), time_args_.begin(), time_args_.end());
        return spawn(argv, dir_.path / "stderr.txt", timeout_s, fmt::format("\"{}\"", line_));
    }

    std::vector<std::string> argv_;
    std::string line_;
    std::vector<std::string> time_args_, env_args_;
    TempDir dir_;
    std::unique_ptr<Coprocess> server_;  ///< declared after dir_: stopped before its stderr file goes
    bool legacy_ = false;
    std::vector<AbLabel> rows_;
};

class BackendSide final : public AbSide {
public:
    BackendSide(std::string name, std::unique_ptr<Backends> backends, const Suite &suite, Plan plan, std::vector<std::string> lockfiles)
        : name_(std::move(name)), backends_(std::move(backends)), suite_(suite), plan_(std::move(plan)), lockfiles_(std::move(lockfiles)) {
        for (const auto &pc : plan_.cases) {
            inputs_.push_back(std::make_unique<CaseInputs>(generate_inputs(suite_, *pc.spec)));
            for (const PlannedKernel *k : pc.kernels)
                targets_.push_back({{pc.spec->id, k->spec.label()}, Invocation{&suite_, pc.spec, inputs_.back().get(), &k->spec}});
        }
    }

    std::string describe() const override { return name_; }
    /// Both sides run in this process: what differs is the backends' own (an adapter's
    /// versions), their kernels' and the side's lock files.
    Result<json::object> fingerprint(double) override {
        return collect_fingerprint(backends_->kernels(), backends_->fingerprint(), lockfiles_);
    }

    Result<std::filesystem::path> profile(const AbLabel &label, const std::filesystem::path &dir) override {
        for (const auto &[l, inv] : targets_)
            if (l == label) return backends_->host_of(inv.kernel->kernel)->profile(inv, dir);
        return fail(ErrorKind::Usage, "{}: no case x kernel {} / {}", name_, label.first, label.second);
    }

    Result<std::map<AbLabel, double>> round(const AbRoundOptions &o) override {
        std::map<AbLabel, double> times;
        for (const auto &[label, inv] : targets_) {
            const auto got = backends_->host_of(inv.kernel->kernel)->time({inv}, TimingRequest{o.samples, o.min_time_s, true, o.timeout_s});
            if (!got.at(0).error.empty()) continue;  // reported by outputs(); a pair needs both sides
            times[label] = median(got.at(0).samples_s);
        }
        return times;
    }

    Result<std::map<AbLabel, AbOutput>> outputs(const AbRoundOptions &o) override {
        std::map<AbLabel, AbOutput> out;
        for (const auto &[label, inv] : targets_) {
            ObserveRequest req;
            req.timeout_s = o.timeout_s;
            req.program = true;
            if (o.memory) ask_memory(req, suite_, *inv.spec);
            Backend *b = backends_->host_of(inv.kernel->kernel);
            AbOutput a;
            std::string why = missing_features(*backends_->find(inv.kernel->kernel), *inv.spec);
            if (why.empty()) why = b->unsupported(inv, o.timeout_s);
            if (!why.empty()) {
                a.error = "skipped: " + why;
                out[label] = std::move(a);
                continue;
            }
            Observation obs = b->observe(inv, req);
            if (obs.crash) a.error = obs.crash->describe();
            else if (!obs.unsupported.empty()) a.error = "skipped: unsupported: " + obs.unsupported;
            else if (!obs.host_error.empty()) a.error = obs.host_error;
            else if (obs.kernel_rc != 0) a.error = fmt::format("kernel returned error {}: {}", obs.kernel_rc, obs.kernel_error);
            else a.values = std::move(obs.output);
            a.compile_s = obs.compile_s;
            a.program = std::move(obs.program);
            a.rounding = backends_->find(inv.kernel->kernel)->rounding;
            if (a.error.empty()) a.memory = std::move(obs.memory);
            a.workspace_growth = backends_->find(inv.kernel->kernel)->workspace_growth;
            out[label] = std::move(a);
        }
        return out;
    }

private:
    std::string name_;
    std::unique_ptr<Backends> backends_;
    const Suite &suite_;
    Plan plan_;
    std::vector<std::unique_ptr<CaseInputs>> inputs_;
    std::vector<std::pair<AbLabel, Invocation>> targets_;
    std::vector<std::string> lockfiles_;
};

}  // namespace

std::unique_ptr<AbSide> build_side(const AbSideSpec &side, const std::filesystem::path &suite_file, const PlanFilter &filter) {
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    const std::string cmd = side.build.empty() && !ec ? self : ab_command(side.build);
    std::vector<std::string> argv;
    if (std::filesystem::exists(cmd, ec)) argv = {cmd};  // a path, spaces and all
    else if (auto words = split_command(cmd)) argv = std::move(*words);
    else argv = {cmd};
    std::vector<std::string> time_args = {"--suite", suite_file.string()}, env_args;
    for (const auto &[flag, values] : {std::pair{"--plugin", &side.plugins}, std::pair{"--adapter", &side.adapters}})
        for (const auto &v : *values) time_args.insert(time_args.end(), {flag, v}), env_args.insert(env_args.end(), {flag, v});
    for (const auto &l : side.lockfiles) env_args.insert(env_args.end(), {"--lockfile", l});
    for (const auto &k : filter.kernels) time_args.insert(time_args.end(), {"--kernel", k});
    for (const auto &c : filter.cases) time_args.insert(time_args.end(), {"--case", c});
    return std::make_unique<BuildSide>(std::move(argv), side.name.empty() ? cmd : side.name, std::move(time_args), std::move(env_args));
}

Result<std::unique_ptr<AbSide>> backend_side(std::string name, std::unique_ptr<Backends> backends, const Suite &suite,
                                             const PlanFilter &filter, std::vector<std::string> lockfiles) {
    std::vector<std::string> origins;
    for (const auto *k : backends->kernels())
        if (k->origin != "built-in") origins.push_back(k->origin);
    auto plan = make_plan(suite, backends->kernels(), origins, filter);
    if (!plan) return std::unexpected(plan.error());
    if (plan->runs() == 0) return fail(ErrorKind::Usage, "{}: no case x kernel of suite {} to compare", name, suite.name);
    return std::unique_ptr<AbSide>(
        std::make_unique<BackendSide>(std::move(name), std::move(backends), suite, std::move(*plan), std::move(lockfiles)));
}

}  // namespace attngate
