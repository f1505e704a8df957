// Kernel registry and plugin loading.
#include "backend/kernel_registry.hpp"

#include <dlfcn.h>

#include <cstring>
#include <utility>

#include <fmt/ranges.h>

#include "backend/isolation.hpp"
#include "plan/kernel_info.hpp"

namespace attngate {

void KernelRegistry::DlClose::operator()(void *h) const {
    if (h) ::dlclose(h);
}

KernelRegistry KernelRegistry::with_builtins() {
    KernelRegistry r;
    size_t n = 0;
    const attngate_kernel *table = attngate_builtin_kernels(&n);
    for (size_t i = 0; i < n; ++i) ATTNGATE_CHECK(r.add(&table[i], "built-in").has_value());
    return r;
}

namespace {

constexpr size_t kMaxPluginKernels = 4096;
constexpr size_t kMaxKernelString = 1024;

/// Why a kernel string cannot be shown or stored (unterminated within the bound, or with
/// control characters that would reach a terminal raw), or empty.
std::string bad_string(const char *text, const char *field) {
    const size_t len = ::strnlen(text, kMaxKernelString);
    if (len == kMaxKernelString) return fmt::format("its {} is not a terminated string of under {} bytes", field, kMaxKernelString);
    const std::string_view s(text, len);
    return std::string_view(field) == "name" ? kernel_name_problem(s) : kernel_text_problem(s, field);
}

/// Why a plugin's table cannot be used, or empty. Reads every field the harness reads, so
/// that a bad pointer faults here, in the probe child, and not in the harness.
std::string table_problem(const attngate_kernel *table, size_t n) {
    if (n > kMaxPluginKernels) return fmt::format("its entry function declares {} kernels (at most {})", n, kMaxPluginKernels);
    if (n > 0 && !table) return fmt::format("its entry function returns no table (NULL) for {} kernels", n);
    for (size_t i = 0; i < n; ++i) {
        const attngate_kernel &k = table[i];
        for (const auto &[text, field] : {std::pair{k.name, "name"}, {k.version, "version"}, {k.description, "description"}})
            if (text)
                if (auto why = bad_string(text, field); !why.empty()) return fmt::format("kernel {}: {}", i, why);
    }
    return {};
}

/// Loads the plugin in a forked child first: a constructor that crashes, hangs or exits, an
/// entry function that faults and a table that lies become an error naming the plugin.
Result<void> probe_plugin(const std::filesystem::path &path) {
    auto answer = run_isolated(
        [&]() -> std::string {
            void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!h) return fmt::format("cannot load plugin: {}", ::dlerror());
            auto entry = reinterpret_cast<attngate_plugin_entry_fn>(::dlsym(h, ATTNGATE_PLUGIN_ENTRY));
            if (!entry) return fmt::format("plugin does not export {}", ATTNGATE_PLUGIN_ENTRY);
            size_t n = 0;
            const attngate_kernel *table = entry(&n);
            const std::string why = table_problem(table, n);
            return why.empty() ? "ok" : why;
        },
        30.0);
    if (!answer)
        return fail(ErrorKind::BadInput, "{}: the plugin failed while being loaded in a test process: {}", path.string(),
                    answer.error().describe());
    if (*answer != "ok") return fail(ErrorKind::BadInput, "{}: {}", path.string(), answer->empty() ? "the plugin ended the process while loading" : *answer);
    return {};
}

}  // namespace

Result<void> KernelRegistry::add(const attngate_kernel *k, const std::string &origin) {
    if (k->api_version < ATTNGATE_API_VERSION_OLDEST || k->api_version > ATTNGATE_API_VERSION)
        return fail(ErrorKind::BadInput, "{}: kernel api_version {} (this attngate speaks {} and still loads {})", origin, k->api_version,
                    ATTNGATE_API_VERSION, ATTNGATE_API_VERSION_OLDEST);
    if (!k->name || !*k->name || !k->run)
        return fail(ErrorKind::BadInput, "{}: a kernel without a name or run function", origin);
    if (auto why = kernel_name_problem(k->name); !why.empty()) return fail(ErrorKind::BadInput, "{}: {}", origin, why);
    if (find(k->name))
        return fail(ErrorKind::BadInput, "{}: kernel \"{}\" is already registered", origin, k->name);
    kernels_.push_back(k);
    origins_.push_back(origin);
    return {};
}

Result<void> KernelRegistry::load_plugin(const std::filesystem::path &path) {
    // A plugin is a file: "libteam.so" is ./libteam.so, never a library dlopen() would look
    // for in the system's search path (where "libm.so.6" is found).
    const std::filesystem::path file = path.has_parent_path() ? path : std::filesystem::path(".") / path;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return fail(ErrorKind::BadInput, "{}: cannot load plugin: no such file", path.string());
    if (auto probed = probe_plugin(file); !probed) return probed;
    std::unique_ptr<void, DlClose> handle(::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle) return fail(ErrorKind::BadInput, "{}: cannot load plugin: {}", path.string(), ::dlerror());
    auto entry = reinterpret_cast<attngate_plugin_entry_fn>(::dlsym(handle.get(), ATTNGATE_PLUGIN_ENTRY));
    if (!entry) return fail(ErrorKind::BadInput, "{}: plugin does not export {}", path.string(), ATTNGATE_PLUGIN_ENTRY);
    size_t n = 0;
    const attngate_kernel *table = entry(&n);
    if (auto why = table_problem(table, n); !why.empty()) return fail(ErrorKind::BadInput, "{}: {}", path.string(), why);
    for (size_t i = 0; i < n; ++i) {
        auto r = add(&table[i], path.string());
        if (!r) return r;
    }
    plugins_.push_back(std::move(handle));
    return {};
}

const attngate_kernel *KernelRegistry::find(std::string_view name) const {
    for (const auto *k : kernels_)
        if (name == k->name) return k;
    return nullptr;
}

std::string KernelRegistry::names() const {
    std::vector<std::string> v;
    for (const auto *k : kernels_) v.emplace_back(k->name);
    return fmt::format("{}", fmt::join(v, ", "));
}

}  // namespace attngate
