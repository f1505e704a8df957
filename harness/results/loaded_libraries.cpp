// Loaded shared objects from dl_iterate_phdr, their sonames from each object's dynamic
// section, and their packages from dpkg's file lists and status file; plugins' toolchains
// from their ELF files.
#include "results/loaded_libraries.hpp"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/files.hpp"
#include "results/elf_file.hpp"

namespace attngate {

namespace {

struct Loaded {
    std::string name;    ///< the path the loader opened
    std::string soname;  ///< DT_SONAME, or empty
};

/// DT_SONAME of a loaded object. glibc relocates the dynamic section's pointers in place;
/// a pointer below the load address is still a file offset and gets it added.
std::string soname_of(const dl_phdr_info *info) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const auto *dyn = reinterpret_cast<const ElfW(Dyn) *>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        ElfW(Addr) strtab = 0;
        ElfW(Xword) soname = 0;
        bool has_soname = false;
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            if (dyn->d_tag == DT_STRTAB) strtab = dyn->d_un.d_ptr;
            else if (dyn->d_tag == DT_SONAME) soname = dyn->d_un.d_val, has_soname = true;
        }
        if (!has_soname || strtab == 0) return "";
        if (strtab < info->dlpi_addr) strtab += info->dlpi_addr;
        return reinterpret_cast<const char *>(strtab + soname);
    }
    return "";
}

int collect(dl_phdr_info *info, size_t, void *data) {
    const std::string name = info->dlpi_name ? info->dlpi_name : "";
    if (name.find('/') != std::string::npos)  // the program is "", the vDSO a bare name
        static_cast<std::vector<Loaded> *>(data)->push_back({name, soname_of(info)});
    return 0;
}

/// The spellings under which dpkg may list a file, the real file's first (a -dev package
/// owns the symlink to it): canonical and as given, each with and without a leading /usr
/// (Debian 12 merges /lib into /usr/lib, but packages still list either).
std::vector<std::string> spellings(const std::filesystem::path &p) {
    std::error_code ec;
    std::vector<std::string> out;
    if (const auto c = std::filesystem::canonical(p, ec); !ec) out.push_back(c.string());
    out.push_back(p.string());
    for (size_t i = 0, n = out.size(); i < n; ++i)
        out.push_back(out[i].starts_with("/usr/") ? out[i].substr(4) : "/usr" + out[i]);
    return out;
}

std::filesystem::path dpkg_dir() {
    const char *dir = std::getenv("DPKG_ADMINDIR");
    return dir && *dir ? dir : "/var/lib/dpkg";
}

/// Package (a file list's stem, "libc6:amd64" or "zlib1g") per wanted spelling, from
/// <admindir>/info/*.list; stops reading once every spelling is found.
std::map<std::string, std::string> owners(const std::set<std::string> &wanted, const std::filesystem::path &admin) {
    std::map<std::string, std::string> found;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(admin / "info", ec), end; !ec && it != end && found.size() < wanted.size(); it.increment(ec)) {
        if (it->path().extension() != ".list") continue;
        std::ifstream in(it->path());
        for (std::string line; std::getline(in, line);)
            if (wanted.contains(line)) found.emplace(line, it->path().stem().string());
    }
    return found;
}

/// Installed version per package ("name" or "name:arch"), from <admindir>/status.
std::map<std::string, std::string> versions(const std::set<std::string> &packages, const std::filesystem::path &admin) {
    std::map<std::string, std::string> out;
    std::ifstream in(admin / "status");
    std::string package, arch, version;
    bool installed = false;
    const auto stanza_end = [&] {
        if (installed && !version.empty())
            for (const std::string &key : {package, package + ":" + arch})
                if (packages.contains(key)) out[key] = version;
        package.clear(), arch.clear(), version.clear(), installed = false;
    };
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) stanza_end();
        else if (line.starts_with("Package: ")) package = line.substr(9);
        else if (line.starts_with("Architecture: ")) arch = line.substr(14);
        else if (line.starts_with("Version: ")) version = line.substr(9);
        else if (line.starts_with("Status: ")) installed = line.ends_with(" installed");
    }
    stanza_end();
    return out;
}

}  // namespace

std::vector<json::object> file_origins(const std::vector<std::filesystem::path> &paths) {
    std::vector<std::vector<std::string>> names;
    std::set<std::string> wanted;
    for (const auto &p : paths) {
        names.push_back(spellings(p));
        wanted.insert(names.back().begin(), names.back().end());
    }
    const std::filesystem::path admin = dpkg_dir();
    const auto owner = owners(wanted, admin);
    std::set<std::string> packages;
    for (const auto &[file, package] : owner) packages.insert(package);
    const auto version = versions(packages, admin);
    std::vector<json::object> out;
    for (size_t i = 0; i < paths.size(); ++i) {
        std::error_code ec;
        const auto canonical = std::filesystem::canonical(paths[i], ec);
        json::object o{{"path", ec ? paths[i].string() : canonical.string()}};
        if (ec) {
            o["missing"] = true;
            out.push_back(std::move(o));
            continue;
        }
        for (const auto &name : names[i])
            if (const auto it = owner.find(name); it != owner.end()) {
                const std::string &package = it->second;
                o["package"] = package.substr(0, package.find(':'));
                o["version"] = version.contains(package) ? version.at(package) : "unknown";
                break;
            }
        if (!o.contains("package")) {  // not from a package: its bytes say which build it is
            auto bytes = read_file(canonical);
            o["sha256"] = bytes ? sha256_hex(*bytes) : "unreadable";
        }
        out.push_back(std::move(o));
    }
    return out;
}

json::object loaded_libraries() {
    std::vector<Loaded> loaded;
    dl_iterate_phdr(collect, &loaded);
    std::vector<std::filesystem::path> paths;
    for (const auto &l : loaded) paths.emplace_back(l.name);
    const auto origins = file_origins(paths);
    std::map<std::string, json::object> sorted;  // by soname: the same on every run
    for (size_t i = 0; i < loaded.size(); ++i)
        sorted.emplace(loaded[i].soname.empty() ? std::filesystem::path(loaded[i].name).filename().string() : loaded[i].soname, origins[i]);
    json::object out;
    for (auto &[soname, origin] : sorted) out[soname] = std::move(origin);
    return out;
}

namespace {

std::string canonical_or_same(const std::string &path) {
    std::error_code ec;
    const auto c = std::filesystem::canonical(path, ec);
    return ec ? path : c.string();
}

/// The keys of plugin_toolchains: a file name, or the path when two plugins share the name.
std::vector<std::string> plugin_keys(const std::vector<std::string> &paths) {
    std::map<std::string, int> uses;
    for (const auto &p : paths) ++uses[std::filesystem::path(p).filename().string()];
    std::vector<std::string> keys;
    for (const auto &p : paths) {
        const std::string name = std::filesystem::path(p).filename().string();
        keys.push_back(uses[name] > 1 ? p : name);
    }
    return keys;
}

}  // namespace

Result<json::object> plugin_toolchains(const std::vector<std::string> &origins) {
    std::vector<Loaded> loaded;
    dl_iterate_phdr(collect, &loaded);
    std::set<std::string> loaded_paths;
    std::map<std::string, std::string> by_soname;  // as the loader matches DT_NEEDED: soname, else file name
    for (const auto &l : loaded) {
        const std::string path = canonical_or_same(l.name);
        loaded_paths.insert(path);
        by_soname.emplace(l.soname.empty() ? std::filesystem::path(l.name).filename().string() : l.soname, path);
    }
    std::vector<std::string> plugins, given;  // canonical, each once, in origin order; as given
    for (const auto &origin : origins) {
        const std::string path = canonical_or_same(origin);
        if (!loaded_paths.contains(path) || std::find(plugins.begin(), plugins.end(), path) != plugins.end()) continue;
        plugins.push_back(path);
        given.push_back(origin);
    }
    std::vector<ElfBuildInfo> infos;
    std::vector<std::filesystem::path> needed_paths;  // every plugin's DT_NEEDED, resolved, in order
    for (const auto &path : plugins) {
        auto info = read_elf_build_info(path);
        if (!info) return fail(ErrorKind::BadInput, "plugin {}", info.error().message);  // the message starts with the path
        for (const auto &soname : info->needed)
            needed_paths.emplace_back(by_soname.contains(soname) ? by_soname.at(soname) : soname);
        infos.push_back(std::move(*info));
    }
    const auto origins_of_needed = file_origins(needed_paths);
    const auto keys = plugin_keys(given);  // the name given, not a symlink's target: libteam.so, not libteam.so.1.2
    json::object out;
    size_t next = 0;
    for (size_t i = 0; i < plugins.size(); ++i) {
        json::object needed;
        for (const auto &soname : infos[i].needed) needed[soname] = origins_of_needed.at(next++);
        json::object p{{"compilers", json::array(infos[i].comments.begin(), infos[i].comments.end())}, {"needed", std::move(needed)}};
        if (!infos[i].runpath.empty()) p["runpath"] = infos[i].runpath;
        out[keys[i]] = std::move(p);
    }
    return out;
}

}  // namespace attngate
