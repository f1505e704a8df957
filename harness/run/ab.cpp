// A/B orchestration: spawn each side's `attngate time`, pair the rounds, decide.
#include "run/ab.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checks/perf_check.hpp"
#include "io/files.hpp"
#include "io/json_io.hpp"
#include "plan/inputs.hpp"
#include "stats/stats.hpp"

namespace attngate {

namespace {

/// A temporary file removed on scope exit.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string &tag) {
        char name[] = "/tmp/attngate-ab-XXXXXX";
        const int fd = ::mkstemp(name);
        ATTNGATE_CHECK(fd >= 0);
        ::close(fd);
        path = std::string(name) + "-" + tag;
        ::unlink(name);
    }
    ~TempFile() { ::unlink(path.c_str()); }
};

/// Runs `sh -c '<cmd> "$@"' sh args...`; stderr goes to err_path.
Result<void> run_side(const std::string &cmd, const std::vector<std::string> &args, const std::string &err_path, double timeout_s) {
    const pid_t pid = ::fork();
    if (pid < 0) return fail(ErrorKind::Infra, "cannot fork for \"{}\"", cmd);
    if (pid == 0) {
        const int devnull = ::open("/dev/null", O_WRONLY);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(devnull, STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
        const std::string script = cmd + " \"$@\"";
        std::vector<char *> argv = {const_cast<char *>("sh"), const_cast<char *>("-c"), const_cast<char *>(script.c_str()),
                                    const_cast<char *>("sh")};
        for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        ::execv("/bin/sh", argv.data());
        ::_exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return fail(ErrorKind::Infra, "\"{}\" did not finish within {:.0f} s", cmd, timeout_s);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    std::string tail = read_file(err_path).value_or("");
    if (tail.size() > 400) tail = tail.substr(tail.size() - 400);
    return fail(ErrorKind::Infra, "\"{}\" failed ({}): {}", cmd,
                WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status)), tail);
}

using SideSamples = std::map<std::pair<std::string, std::string>, double>;

Result<SideSamples> read_side(const std::string &path, const std::string &cmd) {
    auto doc = load_json_file(path);
    if (!doc) return fail(ErrorKind::Infra, "\"{}\" wrote no timing file: {}", cmd, doc.error().message);
    SideSamples out;
    if (!doc->is_array()) return fail(ErrorKind::Infra, "{}: expected an array of timings from \"{}\"", path, cmd);
    for (const auto &e : doc->get_array()) {
        const auto &o = e.as_object();
        std::vector<double> s;
        for (const auto &x : o.at("samples_s").as_array()) s.push_back(x.to_number<double>());
        if (s.empty()) continue;
        // A fresh process per round is colder than a long run: the median of a few
        // samples keeps one cold sample from deciding the pair.
        out[{std::string(o.at("case").as_string()), std::string(o.at("kernel").as_string())}] = median(s);
    }
    return out;
}

}  // namespace

std::string ab_command(const std::string &side) {
    std::error_code ec;
    if (std::filesystem::is_directory(side, ec)) return (std::filesystem::path(side) / "attngate").string();
    return side;
}

Result<RunResults> run_ab(const Suite &suite, const AbOptions &o, const std::function<void(int, int)> &progress) {
    const std::string cmds[2] = {ab_command(o.a), ab_command(o.b)};
    std::map<std::pair<std::string, std::string>, std::vector<double>> samples[2];
    TempFile out("times.json"), err("stderr.txt");
    std::vector<std::string> args = {"time", "--repetitions", std::to_string(o.samples_per_round), "--min-time", fmt::format("{}", o.min_time_s), "--out", out.path};
    args.insert(args.end(), o.time_args.begin(), o.time_args.end());
    for (int round = 0; round < o.rounds; ++round) {
        if (progress) progress(round + 1, o.rounds);
        std::map<std::pair<std::string, std::string>, double> got[2];
        for (int step = 0; step < 2; ++step) {
            const int side = (round % 2 == 0) ? step : 1 - step;  // A B, then B A: drift cancels
            if (auto r = run_side(cmds[side], args, err.path, o.timeout_s); !r) return std::unexpected(r.error());
            auto s = read_side(out.path, cmds[side]);
            if (!s) return std::unexpected(s.error());
            got[side] = std::move(*s);
        }
        for (const auto &[label, t] : got[0])  // a pair needs both sides of the same round
            if (got[1].contains(label)) {
                samples[0][label].push_back(t);
                samples[1][label].push_back(got[1][label]);
            }
    }
    RunResults results;
    results.suite = suite.name;
    results.suite_file = suite.file.string();
    results.checks = {"perf"};
    std::vector<PerfDecision> decisions;
    std::vector<std::pair<std::string, std::string>> labels;
    for (const auto &[label, a] : samples[0]) {
        labels.push_back(label);
        decisions.push_back(decide_paired(samples[1][label], a, o.policy));
    }
    apply_benjamini_hochberg(decisions, o.policy.alpha);
    std::map<std::string, double> flops;  // per case: its segment ids count, as in the perf phase
    for (size_t i = 0; i < labels.size(); ++i) {
        const CaseSpec *c = suite.find_case(labels[i].first);
        if (!c) return fail(ErrorKind::Infra, "the builds timed case \"{}\", which {} does not have", labels[i].first, suite.file.string());
        if (!flops.contains(c->id)) {
            const CaseInputs in = generate_inputs(suite, *c);
            flops[c->id] = case_flops(*c, in.segment_ids_q, in.segment_ids_kv);
        }
        CaseResult r;
        r.case_id = labels[i].first;
        r.kernel = labels[i].second;
        CheckResult check = perf_check(samples[1][labels[i]], samples[0][labels[i]], &decisions[i], PerfBaselineState::Present, "",
                                       attention_shape(*c), flops[c->id], 100 * o.policy.threshold, "A/B paired on this machine", o.strict);
        check.metrics["mode"] = "ab";
        check.metrics["a"] = cmds[0];
        check.metrics["b"] = cmds[1];
        r.checks.push_back(std::move(check));
        results.results.push_back(std::move(r));
    }
    results.complete = true;
    return results;
}

}  // namespace attngate
