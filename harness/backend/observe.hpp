// Observing an in-process kernel on one case: its output, and (when asked) its memory
// over repeated calls, including a probe at twice the sequence lengths to hold the
// kernel to its workspace promise. Produces observation data only; checks judge it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "attngate/kernel_abi.h"
#include "backend/backend.hpp"
#include "backend/observation.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// A kernel's instance for the calls made in this process: what its init returned,
/// handed to its free on destruction. Kernels without init have a null instance.
class KernelInstance {
public:
    KernelInstance(const attngate_kernel &kernel, int num_threads);
    ~KernelInstance();
    KernelInstance(const KernelInstance &) = delete;
    KernelInstance &operator=(const KernelInstance &) = delete;

    void *get() const { return instance_; }
    /// Non-empty when init failed.
    const std::string &error() const { return error_; }

private:
    const attngate_kernel &kernel_;
    void *instance_ = nullptr;
    std::string error_;
};

/// Runs the kernel on the invocation's case in this process.
Observation observe_kernel(const attngate_kernel &kernel, const Invocation &inv, const ObserveRequest &req);

/// The case at twice its sequence lengths (bias and segment shapes follow; a paged case's
/// q_lens, kv_lens and pool double).
CaseSpec doubled_sequences(const CaseSpec &c);

/// A kernel-supplied C string of at most `capacity` bytes, cut at the first NUL, without
/// trusting that there is one, and made valid UTF-8 (it ends up in JSON).
std::string bounded_string(const char *buffer, size_t capacity);

/// A memory observation as JSON (every eye; the series empty and -1 where not measured),
/// for the trip from an isolated child and for `time --outputs --memory`'s index.
json::object memory_to_json(const MemoryObservation &m);
/// Reads what memory_to_json wrote; an error naming `file` and the field under `path`.
Result<MemoryObservation> memory_from_json(const json::value &v, const std::string &file, const std::string &path);

/// Serialisation for the trip from an isolated child back to the parent.
std::string serialize_observation(const Observation &o);
/// Parses what serialize_observation wrote; nullopt when truncated or malformed.
std::optional<Observation> parse_observation(std::string_view bytes);

}  // namespace attngate
