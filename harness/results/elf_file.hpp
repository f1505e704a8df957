// What a shared object's own bytes say about how it was built: the strings of its .comment
// section (one per compiler or tool that contributed an object file: "GCC: (Debian
// 12.2.0-14) 12.2.0", "Debian clang version 19.1.7") and its dynamic section (DT_NEEDED,
// DT_SONAME, DT_RUNPATH). Every offset is checked against the file: a truncated or
// malformed ELF is an error naming the file, never a crash.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/error.hpp"

namespace attngate {

struct ElfBuildInfo {
    std::vector<std::string> comments;  ///< .comment's NUL-separated strings, each once, in file order
    std::vector<std::string> needed;    ///< DT_NEEDED sonames, in order
    std::string soname;                 ///< DT_SONAME, or empty
    std::string runpath;                ///< DT_RUNPATH, else DT_RPATH, or empty
};

/// The build information of the ELF file at `path` (32- or 64-bit, little-endian).
Result<ElfBuildInfo> read_elf_build_info(const std::filesystem::path &path);

/// The same from the file's bytes; `where` names the file in errors.
Result<ElfBuildInfo> parse_elf_build_info(std::string_view bytes, const std::string &where);

}  // namespace attngate
