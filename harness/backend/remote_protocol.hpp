// The protocol's messages (docs/protocol.md), built and decoded without a process or a
// socket: what remote_backend.cpp sends and how it reads what an adapter answers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "backend/backend.hpp"
#include "backend/observation.hpp"
#include "io/error.hpp"
#include "plan/kernel_info.hpp"

namespace attngate {

/// A kernel's declared workspace growth from its protocol name ("constant", ...).
uint32_t workspace_from_name(std::string_view s);
/// The integers of an array member (non-numbers skipped); empty when absent.
std::vector<int64_t> int_series(const boost::json::object &o, std::string_view key);
/// A string member, or empty.
std::string string_at(const boost::json::object &o, std::string_view key);

/// The protocol's case object for a suite case (docs/protocol.md, "The case object").
boost::json::object protocol_case(const CaseSpec &c, const KernelSpec &k);
/// The output shape an adapter answers with: a dense case's [B, Sq, Hq, Dv]; a paged
/// case's [total_q, Hq, Dv] (the harness stores it as [1, total_q, Hq, Dv], the same data).
std::vector<int64_t> protocol_output_shape(const CaseSpec &c);
/// Fills o from a kernel call's answer that said ok: false; true when it did.
bool kernel_declined(const boost::json::object &body, Observation &o);

/// GET /v1/kernels: the kernels an adapter serves, or why the list is not the protocol.
Result<std::vector<KernelInfo>> decode_kernels(const boost::json::object &body, const std::string &origin);
/// GET /v1/kernels "errors": "source: error" per kernel source that failed to load.
std::vector<std::string> decode_load_errors(const boost::json::object &body);
/// POST /v1/memory's series, for `calls` calls (warm-up included).
MemoryObservation decode_memory(const boost::json::object &body, int64_t calls);

}  // namespace attngate
