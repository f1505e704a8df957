// The remote protocol's messages (docs/protocol.md) as pure functions: requests built from
// a case, answers decoded and range-checked. No process and no network here: the remote
// backend sends what these build, and fuzz/remote_fuzz.cpp drives the decoders directly.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "backend/backend.hpp"
#include "io/npy.hpp"

namespace attngate {

/// The protocol this attngate speaks; an adapter announces its own in GET /v1/hello, and
/// the two must be equal (docs/protocol.md#versions).
constexpr int kRemoteProtocol = 1;
/// The largest count an answer may carry: every integer up to 2^53 is exact in a JSON number.
constexpr double kMaxRemoteCount = 9007199254740992.0;
/// The longest time an answer may report, in seconds: a day, the largest --timeout.
constexpr double kMaxRemoteSeconds = 86400.0;

/// An answer, or why it is outside the protocol, naming the place ("$.rss_bytes[2]: ...").
template <typename T>
using Decoded = std::expected<T, std::string>;

/// The protocol's case object for a suite case ("The case object").
boost::json::object protocol_case(const CaseSpec &c, const KernelSpec &k);
/// The output shape an adapter answers with: a dense case's [B, Sq, Hq, Dv]; a paged
/// case's [total_q, Hq, Dv] (the harness stores it as [1, total_q, Hq, Dv], the same data).
std::vector<int64_t> protocol_output_shape(const CaseSpec &c);
/// The body of a kernel-calling request: kernel, case, `inputs` (role -> uploaded tensor name), plus `extra` fields.
boost::json::value call_request(const Invocation &inv, const boost::json::object &inputs, boost::json::object extra);

/// A JSON answer's object from its HTTP status and body; `what` ("POST http://.../v1/run")
/// starts the message. A non-2xx status, a body that is not one JSON object (a key twice
/// included) is outside the protocol.
Decoded<boost::json::object> decode_answer(long status, std::string_view body, const std::string &what);

struct Hello {
    std::string adapter;              ///< its name, held to the kernel-name rule
    boost::json::object fingerprint;  ///< adapter_version plus its "fingerprint" object
};
/// The version handshake: empty when GET /v1/hello announces kRemoteProtocol, else what is
/// wrong, worded to follow "adapter at URL " ("speaks attngate protocol 2, this attngate
/// speaks 1: ..."). A hello with no "protocol" is refused too: no version is no promise.
std::string protocol_mismatch(const boost::json::object &hello);
/// "attngate-jax 0.2.0, " from a hello's "adapter" and "adapter_version", for a message that
/// names the adapter before its hello was accepted: short printable strings only, else "".
std::string adapter_self_description(const boost::json::object &hello);
/// GET /v1/hello: protocol kRemoteProtocol (protocol_mismatch), a name, a fingerprint object.
Decoded<Hello> decode_hello(const boost::json::object &body);
/// GET /v1/kernels: every kernel held to the plugin rules (name, version, description).
Decoded<std::vector<KernelInfo>> decode_kernels(const boost::json::object &body, const std::string &origin);
/// GET /v1/kernels "errors": "<source>: <error>" for each kernel source the adapter could not load.
std::vector<std::string> decode_load_errors(const boost::json::object &body);
/// POST /v1/supports: empty when supported, else "unsupported: <reason>".
Decoded<std::string> decode_supports(const boost::json::object &body);

/// What a kernel-calling answer with "ok" not true says: declined the case, or failed.
struct Declined {
    std::string unsupported;  ///< non-empty: a skip with this reason
    std::string error;        ///< otherwise: the kernel's error
    bool lowers = false;      ///< unsupported here, yet its TPU program lowers ("lowers": true): ask POST /v1/program
};
std::optional<Declined> decode_declined(const boost::json::object &body);

struct RunTimes {
    std::optional<double> compile_s;  ///< compile_cpu_s when given, else compile_s
    std::optional<double> run_s;
};
/// POST /v1/run (ok: true): its times, each finite in [0, kMaxRemoteSeconds] or absent.
Decoded<RunTimes> decode_run(const boost::json::object &body);
/// POST /v1/memory (ok: true): its series of counts, each an integer in [0, kMaxRemoteCount].
Decoded<MemoryObservation> decode_memory(const boost::json::object &body, int64_t calls);
struct TimeAnswer {
    std::vector<double> samples_s;
    std::optional<double> compile_s;
};
/// POST /v1/time (ok: true): at least one sample, each in (0, kMaxRemoteSeconds].
Decoded<TimeAnswer> decode_time(const boost::json::object &body);
/// GET /v1/tensors/<output>: a <f4 .npy of exactly the expected shape.
Decoded<std::vector<float>> decode_output(std::string_view npy, const std::string &what, const std::vector<int64_t> &shape);
/// POST /v1/profile (ok: true): the archive's name, a plain file name.
Decoded<std::string> decode_profile(const boost::json::object &body);
/// The TPU interpreter's contract checks an adapter ran beside POST /v1/run ("contract":
/// {"violations": [...]}), answered or declined; nullopt when it ran none.
Decoded<std::optional<std::vector<std::string>>> decode_contract(const boost::json::object &body);
/// The bearer token in environment variable `name` ("" when unset); a line break, which would
/// add header lines, is refused.
Result<std::string> token_from_env(const std::string &name);
/// A "lost" CrashInfo for an answer outside the protocol.
CrashInfo protocol_crash(const std::string &message, double seconds);
/// What POST /v1/program answered (protocol_error: the HTTP failure, if any): the program, or
/// why there is none: no such endpoint (HTTP 404), a kernel that does not lower, a bad answer.
ProgramObservation program_from_answer(const std::string &protocol_error, const boost::json::object &body, const std::string &adapter);
/// POST /v1/program (ok: true): the target and each part, its hash checked against its text.
Decoded<ProgramObservation> decode_program(const boost::json::object &body);

}  // namespace attngate
