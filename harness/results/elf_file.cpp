// A small ELF reader: the section headers (or, in a file without them, the program
// headers) to .comment and the dynamic section, every read bounds-checked.
#include "results/elf_file.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "io/files.hpp"

namespace attngate {

namespace {

/// The ELF structures of one class (32- or 64-bit).
template <class Ehdr, class Shdr, class Phdr, class Dyn>
struct ElfClass {
    using E = Ehdr;
    using S = Shdr;
    using P = Phdr;
    using D = Dyn;
};
using Elf32 = ElfClass<Elf32_Ehdr, Elf32_Shdr, Elf32_Phdr, Elf32_Dyn>;
using Elf64 = ElfClass<Elf64_Ehdr, Elf64_Shdr, Elf64_Phdr, Elf64_Dyn>;

/// A byte range of the file: [offset, offset + size), known to lie inside it.
struct Extent {
    uint64_t offset = 0, size = 0;
};

class Reader {
public:
    Reader(std::string_view bytes, const std::string &where) : bytes_(bytes), where_(where) {}

    /// A T copied from `offset`, or nullopt when it does not fit in the file.
    template <class T>
    std::optional<T> at(uint64_t offset) const {
        if (offset > bytes_.size() || sizeof(T) > bytes_.size() - offset) return std::nullopt;
        T out;
        std::memcpy(&out, bytes_.data() + offset, sizeof(T));
        return out;
    }

    /// [offset, offset + size) when it lies inside the file; `what` names it in the error.
    Result<Extent> extent(uint64_t offset, uint64_t size, const std::string &what) const {
        if (offset > bytes_.size() || size > bytes_.size() - offset)
            return fail(ErrorKind::BadInput, "{}: malformed ELF: {} (offset {}, {} bytes) runs past the end of the file ({} bytes)", where_,
                        what, offset, size, bytes_.size());
        return Extent{offset, size};
    }

    /// The NUL-terminated string at `index` of a string table.
    Result<std::string> string_in(const Extent &table, uint64_t index, const std::string &what) const {
        if (index >= table.size) return fail(ErrorKind::BadInput, "{}: malformed ELF: {} at string {} is past its table ({} bytes)", where_, what, index, table.size);
        const std::string_view rest = bytes_.substr(table.offset + index, table.size - index);
        const size_t end = rest.find('\0');
        if (end == std::string_view::npos) return fail(ErrorKind::BadInput, "{}: malformed ELF: {} is not NUL-terminated in its table", where_, what);
        return std::string(rest.substr(0, end));
    }

    std::string_view bytes(const Extent &e) const { return bytes_.substr(e.offset, e.size); }
    const std::string &where() const { return where_; }

private:
    std::string_view bytes_;
    const std::string &where_;
};

/// .comment's strings, each once, in order.
std::vector<std::string> comment_strings(std::string_view section) {
    std::vector<std::string> out;
    for (size_t start = 0; start < section.size();) {
        size_t end = section.find('\0', start);
        if (end == std::string_view::npos) end = section.size();
        std::string s(section.substr(start, end - start));
        if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
        start = end + 1;
    }
    return out;
}

/// The dynamic entries' names, read against their string table.
template <class C>
Result<void> read_dynamic(const Reader &r, const Extent &dynamic, const Extent &strings, ElfBuildInfo &info) {
    std::string rpath;
    for (uint64_t off = dynamic.offset; off + sizeof(typename C::D) <= dynamic.offset + dynamic.size; off += sizeof(typename C::D)) {
        const auto d = r.template at<typename C::D>(off);
        if (!d || d->d_tag == DT_NULL) break;
        std::string *into = nullptr;
        std::string needed;
        switch (d->d_tag) {
        case DT_NEEDED: into = &needed; break;
        case DT_SONAME: into = &info.soname; break;
        case DT_RUNPATH: into = &info.runpath; break;
        case DT_RPATH: into = &rpath; break;
        default: continue;
        }
        auto s = r.string_in(strings, d->d_un.d_val, fmt::format("dynamic entry at offset {}", off));
        if (!s) return std::unexpected(s.error());
        *into = std::move(*s);
        if (d->d_tag == DT_NEEDED) info.needed.push_back(std::move(needed));
    }
    if (info.runpath.empty()) info.runpath = std::move(rpath);
    return {};
}

/// More sections than any shared object has: a count read from a corrupt header.
constexpr uint64_t kMaxSections = uint64_t{1} << 20;

/// The section table's extent and its entries' count, with ELF's extended numbering (a count
/// or string-table index too large for the header is kept in section 0).
template <class C>
Result<std::pair<size_t, size_t>> section_count(const Reader &r, const typename C::E &eh) {
    if (eh.e_shoff == 0) return std::pair<size_t, size_t>{0, 0};
    if (eh.e_shentsize != sizeof(typename C::S))
        return fail(ErrorKind::BadInput, "{}: malformed ELF: section header size {} (expected {})", r.where(), eh.e_shentsize, sizeof(typename C::S));
    uint64_t count = eh.e_shnum, names = eh.e_shstrndx;
    if (count == 0 || names == SHN_XINDEX) {
        const auto s0 = r.template at<typename C::S>(eh.e_shoff);
        if (!s0) return fail(ErrorKind::BadInput, "{}: malformed ELF: the section table at offset {} is past the end of the file", r.where(), eh.e_shoff);
        if (count == 0) count = s0->sh_size;
        if (names == SHN_XINDEX) names = s0->sh_link;
    }
    if (count > kMaxSections) return fail(ErrorKind::BadInput, "{}: malformed ELF: {} sections", r.where(), count);
    if (auto t = r.extent(eh.e_shoff, count * sizeof(typename C::S), "the section table"); !t) return std::unexpected(t.error());
    return std::pair<size_t, size_t>{count, names};
}

/// Reads .comment and the dynamic section through the section headers.
template <class C>
Result<bool> from_sections(const Reader &r, const typename C::E &eh, ElfBuildInfo &info) {
    auto counted = section_count<C>(r, eh);
    if (!counted) return std::unexpected(counted.error());
    const auto [count, names_index] = *counted;
    if (count == 0) return false;
    std::vector<typename C::S> sections;
    for (size_t i = 0; i < count; ++i) sections.push_back(*r.template at<typename C::S>(eh.e_shoff + i * sizeof(typename C::S)));
    const auto contents = [&](size_t i) -> Result<Extent> {
        if (i >= count) return fail(ErrorKind::BadInput, "{}: malformed ELF: section index {} of {} sections", r.where(), i, count);
        if (sections[i].sh_type == SHT_NOBITS) return Extent{};
        return r.extent(sections[i].sh_offset, sections[i].sh_size, fmt::format("section {}", i));
    };
    Extent names;  // SHN_UNDEF: no section has a name, so none is .comment
    if (names_index != SHN_UNDEF) {
        auto n = contents(names_index);
        if (!n) return std::unexpected(n.error());
        names = *n;
    }
    for (size_t i = 0; i < count; ++i) {
        const auto &s = sections[i];
        if (s.sh_type == SHT_DYNAMIC) {
            auto dynamic = contents(i);
            if (!dynamic) return std::unexpected(dynamic.error());
            auto strings = contents(s.sh_link);
            if (!strings) return std::unexpected(strings.error());
            if (auto d = read_dynamic<C>(r, *dynamic, *strings, info); !d) return std::unexpected(d.error());
        } else if (s.sh_type == SHT_PROGBITS && names_index != SHN_UNDEF) {
            auto name = r.string_in(names, s.sh_name, fmt::format("the name of section {}", i));
            if (!name) return std::unexpected(name.error());
            if (*name != ".comment") continue;
            auto comment = contents(i);
            if (!comment) return std::unexpected(comment.error());
            info.comments = comment_strings(r.bytes(*comment));
        }
    }
    return true;
}

/// A file without section headers (sstrip'ed): the dynamic section through PT_DYNAMIC, its
/// string table's address mapped to the file through the PT_LOAD segments. No .comment.
template <class C>
Result<void> from_segments(const Reader &r, const typename C::E &eh, ElfBuildInfo &info) {
    if (eh.e_phoff == 0 || eh.e_phnum == 0) return {};
    if (eh.e_phentsize != sizeof(typename C::P))
        return fail(ErrorKind::BadInput, "{}: malformed ELF: program header size {} (expected {})", r.where(), eh.e_phentsize, sizeof(typename C::P));
    if (auto t = r.extent(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(typename C::P), "the program header table"); !t) return std::unexpected(t.error());
    std::vector<typename C::P> segments;
    for (size_t i = 0; i < eh.e_phnum; ++i) segments.push_back(*r.template at<typename C::P>(eh.e_phoff + i * sizeof(typename C::P)));
    const auto to_offset = [&](uint64_t vaddr) -> std::optional<uint64_t> {
        for (const auto &p : segments)
            if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) return p.p_offset + (vaddr - p.p_vaddr);
        return std::nullopt;
    };
    for (const auto &p : segments) {
        if (p.p_type != PT_DYNAMIC) continue;
        auto dynamic = r.extent(p.p_offset, p.p_filesz, "the dynamic segment");
        if (!dynamic) return std::unexpected(dynamic.error());
        std::optional<uint64_t> strtab, strsz;
        for (uint64_t off = dynamic->offset; off + sizeof(typename C::D) <= dynamic->offset + dynamic->size; off += sizeof(typename C::D)) {
            const auto d = *r.template at<typename C::D>(off);
            if (d.d_tag == DT_NULL) break;
            if (d.d_tag == DT_STRTAB) strtab = to_offset(d.d_un.d_ptr);
            if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
        }
        if (!strtab || !strsz) return fail(ErrorKind::BadInput, "{}: malformed ELF: the dynamic segment has no string table in the file", r.where());
        auto strings = r.extent(*strtab, *strsz, "the dynamic string table");
        if (!strings) return std::unexpected(strings.error());
        return read_dynamic<C>(r, *dynamic, *strings, info);
    }
    return {};
}

template <class C>
Result<ElfBuildInfo> parse(const Reader &r) {
    const auto eh = r.template at<typename C::E>(0);
    if (!eh) return fail(ErrorKind::BadInput, "{}: malformed ELF: the file ends inside the ELF header", r.where());
    ElfBuildInfo info;
    auto had_sections = from_sections<C>(r, *eh, info);
    if (!had_sections) return std::unexpected(had_sections.error());
    if (!*had_sections)
        if (auto s = from_segments<C>(r, *eh, info); !s) return std::unexpected(s.error());
    return info;
}

}  // namespace

Result<ElfBuildInfo> parse_elf_build_info(std::string_view bytes, const std::string &where) {
    if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
        return fail(ErrorKind::BadInput, "{}: not an ELF file (it does not start with \\x7fELF)", where);
    if (bytes[EI_DATA] != ELFDATA2LSB) return fail(ErrorKind::BadInput, "{}: a big-endian ELF file, which attngate does not read", where);
    const Reader r(bytes, where);
    switch (bytes[EI_CLASS]) {
    case ELFCLASS64: return parse<Elf64>(r);
    case ELFCLASS32: return parse<Elf32>(r);
    default: return fail(ErrorKind::BadInput, "{}: malformed ELF: unknown class {}", where, static_cast<int>(bytes[EI_CLASS]));
    }
}

Result<ElfBuildInfo> read_elf_build_info(const std::filesystem::path &path) {
    auto bytes = read_file(path);
    if (!bytes) return std::unexpected(bytes.error());
    return parse_elf_build_info(*bytes, path.string());
}

}  // namespace attngate
