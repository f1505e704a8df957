// The ELF reader behind each plugin's toolchain in the fingerprint: known values from a small
// ELF built here, the compiler of this very test binary, and no crash on any truncation or
// corrupted byte, only an error naming the file.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "results/elf_file.hpp"

using namespace attngate;

namespace {

/// A string literal's bytes, NULs included, without the one that ends it.
template <size_t N>
std::string bytes_of(const char (&s)[N]) {
    return std::string(s, N - 1);
}

/// A minimal little-endian ELF64 shared object: .dynstr, .dynamic (two DT_NEEDED, DT_SONAME,
/// DT_RUNPATH), .comment (a string twice) and .shstrtab, the section table last.
std::string tiny_elf() {
    const std::string dynstr = bytes_of("\0libfoo.so.1\0libbar.so\0libme.so.2\0/opt/lib\0");
    const std::string comment = bytes_of("GCC: (test) 1.0\0clang version 99.0.1\0GCC: (test) 1.0\0");
    const std::string shstrtab = bytes_of("\0.dynstr\0.dynamic\0.comment\0.shstrtab\0");
    const Elf64_Dyn dyn[] = {{DT_NEEDED, {1}}, {DT_NEEDED, {13}}, {DT_SONAME, {23}}, {DT_RUNPATH, {34}}, {DT_NULL, {0}}};
    std::string out(sizeof(Elf64_Ehdr), '\0');
    const auto place = [&out](std::string_view bytes) {
        out.resize((out.size() + 7) / 8 * 8, '\0');
        const size_t at = out.size();
        out.append(bytes);
        return at;
    };
    const size_t dynstr_at = place(dynstr);
    const size_t dyn_at = place(std::string_view(reinterpret_cast<const char *>(dyn), sizeof dyn));
    const size_t comment_at = place(comment);
    const size_t shstrtab_at = place(shstrtab);
    Elf64_Shdr sh[5] = {};
    sh[1] = {1, SHT_STRTAB, SHF_ALLOC, 0, dynstr_at, dynstr.size(), 0, 0, 1, 0};
    sh[2] = {9, SHT_DYNAMIC, SHF_ALLOC, 0, dyn_at, sizeof dyn, 1, 0, 8, sizeof(Elf64_Dyn)};
    sh[3] = {18, SHT_PROGBITS, 0, 0, comment_at, comment.size(), 0, 0, 1, 1};
    sh[4] = {27, SHT_STRTAB, 0, 0, shstrtab_at, shstrtab.size(), 0, 0, 1, 0};
    const size_t sh_at = place(std::string_view(reinterpret_cast<const char *>(sh), sizeof sh));
    Elf64_Ehdr eh = {};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = sh_at;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 5;
    eh.e_shstrndx = 4;
    std::memcpy(out.data(), &eh, sizeof eh);
    return out;
}

}  // namespace

TEST_CASE("the ELF reader gives .comment's strings once each and the dynamic section's names", "[elf]") {
    auto info = parse_elf_build_info(tiny_elf(), "tiny.so");
    REQUIRE(info);
    CHECK(info->comments == std::vector<std::string>{"GCC: (test) 1.0", "clang version 99.0.1"});
    CHECK(info->needed == std::vector<std::string>{"libfoo.so.1", "libbar.so"});
    CHECK(info->soname == "libme.so.2");
    CHECK(info->runpath == "/opt/lib");
}

TEST_CASE("the ELF reader names the compiler that built this test binary", "[elf]") {
    auto info = read_elf_build_info("/proc/self/exe");
    REQUIRE(info);
#if defined(__clang__)
    const std::string want = __clang_version__;  // "19.1.7 (3~deb12u1)" in "Debian clang version 19.1.7 (3~deb12u1)"
#else
    const std::string want = std::string(") ") + __VERSION__;  // "GCC: (Debian 12.2.0-14) 12.2.0"
#endif
    CHECK(std::any_of(info->comments.begin(), info->comments.end(), [&](const std::string &c) { return c.find(want) != std::string::npos; }));
    CHECK(std::find(info->needed.begin(), info->needed.end(), "libc.so.6") != info->needed.end());
}

TEST_CASE("a file that is not ELF, or ELF of an unread kind, is an error naming it", "[elf]") {
    for (const std::string &bytes : {std::string("#!/bin/sh\necho hi\n"), std::string(), std::string("\x7f" "ELF", 4)}) {
        auto info = parse_elf_build_info(bytes, "/x/libnot.so");
        REQUIRE_FALSE(info);
        CHECK(info.error().kind == ErrorKind::BadInput);
        CHECK_THAT(info.error().message, Catch::StartsWith("/x/libnot.so: "));
    }
    std::string big_endian = tiny_elf();
    big_endian[EI_DATA] = ELFDATA2MSB;
    auto info = parse_elf_build_info(big_endian, "be.so");
    REQUIRE_FALSE(info);
    CHECK_THAT(info.error().message, Catch::Contains("big-endian"));
    auto missing = read_elf_build_info("/nonexistent/libgone.so");
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message, Catch::Contains("/nonexistent/libgone.so"));
}

TEST_CASE("a truncated or corrupted ELF is an error naming the file, never a crash", "[elf]") {
    const std::string good = tiny_elf();
    // The section table is at the end: every truncation cuts into something the reader needs.
    for (size_t n = 0; n < good.size(); ++n) {
        auto info = parse_elf_build_info(std::string_view(good).substr(0, n), "cut.so");
        INFO("truncated to " << n << " bytes");
        REQUIRE_FALSE(info);
        CHECK_THAT(info.error().message, Catch::StartsWith("cut.so: "));
    }
    // Any one byte set to 0xff or 0: read or refused, with every offset checked (ASan checks
    // the reads in the sanitizer build).
    size_t refused = 0;
    for (size_t i = 0; i < good.size(); ++i)
        for (const char v : {'\xff', '\0'}) {
            std::string bad = good;
            bad[i] = v;
            auto info = parse_elf_build_info(bad, "bad.so");
            if (info) continue;
            ++refused;
            INFO("byte " << i);
            CHECK_THAT(info.error().message, Catch::StartsWith("bad.so: "));
        }
    CHECK(refused > 0);
}
