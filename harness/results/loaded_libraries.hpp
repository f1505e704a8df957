// What actually runs: the shared objects this process has loaded (dl_iterate_phdr) and the
// Debian package each came from, so that a library updated or swapped under an unchanged
// binary (a libcurl4 security update, LD_LIBRARY_PATH) shows in the fingerprint; and each
// plugin's own toolchain, read from its file, so that a compiler bump of a plugin shows too.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace attngate {

/// Where one file came from: {"path": its canonical path, "package": "libcurl4",
/// "version": "7.88.1-10+deb12u8"} when a dpkg package owns it, else {"path", "sha256"} of
/// its bytes; {"path", "missing": true} when it does not exist. One entry per path, in
/// order; dpkg's database is read once for all of them (DPKG_ADMINDIR, as dpkg reads it,
/// else /var/lib/dpkg).
std::vector<json::object> file_origins(const std::vector<std::filesystem::path> &paths);

/// Every shared object loaded now, keyed by its soname (its file name when it has none),
/// each described as file_origins does. The program itself and the vDSO are left out.
json::object loaded_libraries();

/// Each of `origins` (kernel origins: "built-in", plugin paths, adapter command lines) that
/// this process has loaded as a shared object, keyed by its file name as given (its path when
/// two share one): {"compilers": the strings of its ELF .comment section (one per compiler or tool that
/// built a part of it), "needed": {DT_NEEDED soname: the object the loader resolved it to, as
/// file_origins describes it}, "runpath" when it has one}. An origin this process has not
/// loaded is left out; a plugin whose file cannot be read as ELF is an error naming it.
Result<json::object> plugin_toolchains(const std::vector<std::string> &origins);

}  // namespace attngate
