// An adapter started as a child of the harness: `CMD --http 127.0.0.1:0` below a guard
// (io/guard.hpp) that kills whatever it started when it ends and when the harness dies,
// even by SIGKILL; its output kept in a log. Where it serves comes as the line
// "ATTNGATE-ADAPTER LISTENING <url>" on a pipe of its own, never from its output, which
// its kernels can write too.
#pragma once

#include <memory>
#include <string>

#include "io/error.hpp"
#include "io/process.hpp"

namespace attngate {

/// The environment variable that tells a started adapter the number of the descriptor it
/// writes its LISTENING line to (docs/protocol.md#transport).
constexpr const char *kReadyFdEnv = "ATTNGATE_ADAPTER_READY_FD";

class AdapterProcess {
public:
    /// Starts `command` (a shell command line) with `--http 127.0.0.1:0` appended and the
    /// given environment variable set (a per-run token); waits for its LISTENING line on the
    /// descriptor kReadyFdEnv names.
    /// Exit 3 (Infra) when it does not start, exits, or says nothing within ready_timeout_s.
    static Result<std::unique_ptr<AdapterProcess>> start(const std::string &command, const std::string &token_env,
                                                         const std::string &token, double ready_timeout_s);
    ~AdapterProcess();
    AdapterProcess(const AdapterProcess &) = delete;
    AdapterProcess &operator=(const AdapterProcess &) = delete;

    const std::string &url() const { return url_; }
    const std::string &command() const { return command_; }
    /// False once the child has exited (or was killed).
    bool alive();
    /// How the child ended ("exited with code 1", "killed by SIGSEGV") once it has; empty while alive.
    std::string how_it_ended();
    /// Once ended: its exit code, or -1 when a signal ended it.
    int exit_code();
    /// Once ended by a signal: "SIGSEGV"; otherwise empty.
    std::string signal_name();
    /// The last lines the adapter wrote to stdout and stderr.
    std::string log_tail(size_t max_bytes = 2000) const;
    /// Waits up to grace_s for the child to exit on its own, then ends it and all it started.
    void stop(double grace_s);

private:
    AdapterProcess() = default;

    std::unique_ptr<TempDir> log_dir_;
    std::string command_, url_, log_path_;
    int pid_ = -1;
    int status_ = 0;
    bool reaped_ = false;
};

}  // namespace attngate
