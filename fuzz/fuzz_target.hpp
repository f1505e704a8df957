// What every fuzz target asserts about a reader: bad bytes are an input error (exit 2) whose
// message names the file, never a crash, an exception, a sanitizer report or another kind
// of error. libFuzzer turns an abort or an uncaught exception into a saved crash input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "io/error.hpp"

namespace attngate::fuzz {

[[noreturn]] inline void broken(const char *what, std::string_view detail) {
    std::fprintf(stderr, "fuzz invariant broken: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
    std::abort();
}

/// An error from reading `file`: bad input (or a hash mismatch), naming the file.
inline void expect_input_error(const Error &e, std::string_view file) {
    if (e.kind != ErrorKind::BadInput && e.kind != ErrorKind::Corrupt) broken("error kind other than bad input", e.message);
    if (!std::string_view(e.message).starts_with(file)) broken("error message does not start with the file name", e.message);
}

/// A Result that must either hold a value or an input error naming `file`.
template <typename R>
bool accepted(const R &r, std::string_view file) {
    if (!r) expect_input_error(r.error(), file);
    return r.has_value();
}

}  // namespace attngate::fuzz
