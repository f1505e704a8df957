// Expected failures as values: a kind that picks the exit code and a user-facing message
// that names the file and the place in it.
#pragma once

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace attngate {

enum class ErrorKind {
    Usage,     ///< bad command line (exit 2)
    BadInput,  ///< bad suite, golden or other input file (exit 2)
    Corrupt,   ///< a checked-in file does not match its recorded hash (exit 2)
    Infra,     ///< the machine or a service failed us (exit 3)
    Conflict,  ///< a conditional write found the stored object changed since it was read (exit 3)
};

struct Error {
    ErrorKind kind;
    std::string message;
};

template <typename T>
using Result = std::expected<T, Error>;

/// Builds an unexpected Error with a fmt-formatted message.
template <typename... Args>
std::unexpected<Error> fail(ErrorKind kind, fmt::format_string<Args...> f, Args &&...args) {
    return std::unexpected(Error{kind, fmt::format(f, std::forward<Args>(args)...)});
}

/// Process exit codes of the architecture's contract.
enum ExitCode { kExitPass = 0, kExitDrift = 1, kExitBadInput = 2, kExitInfra = 3 };

inline int exit_code_for(ErrorKind kind) {
    return kind == ErrorKind::Infra || kind == ErrorKind::Conflict ? kExitInfra : kExitBadInput;
}

/// Aborts with file:line when an internal invariant breaks (kept in release builds).
#define ATTNGATE_CHECK(cond)                                                             \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fmt::print(stderr, "{}:{}: internal check failed: {}\n", __FILE__, __LINE__, \
                       #cond);                                                           \
            std::abort();                                                                \
        }                                                                                \
    } while (0)

}  // namespace attngate
