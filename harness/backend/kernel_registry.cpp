// Kernel registry and plugin loading.
#include "backend/kernel_registry.hpp"

#include <dlfcn.h>

#include <fmt/ranges.h>

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

Result<void> KernelRegistry::add(const attngate_kernel *k, const std::string &origin) {
    if (k->api_version != ATTNGATE_API_VERSION)
        return fail(ErrorKind::BadInput, "{}: kernel api_version {} (this attngate speaks {})", origin, k->api_version, ATTNGATE_API_VERSION);
    if (!k->name || !*k->name || !k->run)
        return fail(ErrorKind::BadInput, "{}: a kernel without a name or run function", origin);
    if (find(k->name))
        return fail(ErrorKind::BadInput, "{}: kernel \"{}\" is already registered", origin, k->name);
    kernels_.push_back(k);
    origins_.push_back(origin);
    return {};
}

Result<void> KernelRegistry::load_plugin(const std::filesystem::path &path) {
    std::unique_ptr<void, DlClose> handle(::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle) return fail(ErrorKind::BadInput, "{}: cannot load plugin: {}", path.string(), ::dlerror());
    auto entry = reinterpret_cast<attngate_plugin_entry_fn>(::dlsym(handle.get(), ATTNGATE_PLUGIN_ENTRY));
    if (!entry) return fail(ErrorKind::BadInput, "{}: plugin does not export {}", path.string(), ATTNGATE_PLUGIN_ENTRY);
    size_t n = 0;
    const attngate_kernel *table = entry(&n);
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
