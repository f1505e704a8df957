// Kernel registry and plugin loading.
#include "kernel_registry.hpp"

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

std::string feature_names(uint32_t f) {
    static const std::pair<uint32_t, const char *> names[] = {
        {ATTNGATE_FEATURE_CAUSAL, "causal"},   {ATTNGATE_FEATURE_WINDOW, "window"},
        {ATTNGATE_FEATURE_SEGMENT_IDS, "segment_ids"}, {ATTNGATE_FEATURE_BIAS, "bias"},
        {ATTNGATE_FEATURE_SOFTCAP, "softcap"}, {ATTNGATE_FEATURE_GQA, "gqa"},
        {ATTNGATE_FEATURE_HEAD_DIM_V, "head_dim_v"}, {ATTNGATE_FEATURE_F32, "f32"},
        {ATTNGATE_FEATURE_BF16, "bf16"},
    };
    std::vector<std::string> out;
    for (const auto &[bit, name] : names)
        if (f & bit) out.emplace_back(name);
    return fmt::format("{}", fmt::join(out, ", "));
}

std::string unsupported_reason(const attngate_kernel &k, const CaseSpec &c, const attngate_problem &p) {
    uint32_t need = c.dtype == ATTNGATE_DTYPE_BF16 ? ATTNGATE_FEATURE_BF16 : ATTNGATE_FEATURE_F32;
    if (c.causal) need |= ATTNGATE_FEATURE_CAUSAL;
    if (c.window_left >= 0 || c.window_right >= 0) need |= ATTNGATE_FEATURE_WINDOW;
    if (c.segments > 0 || c.segments_per_token) need |= ATTNGATE_FEATURE_SEGMENT_IDS;
    if (!c.bias_shape.empty()) need |= ATTNGATE_FEATURE_BIAS;
    if (c.softcap > 0) need |= ATTNGATE_FEATURE_SOFTCAP;
    if (c.heads_q != c.heads_kv) need |= ATTNGATE_FEATURE_GQA;
    if (c.head_dim_v != c.head_dim) need |= ATTNGATE_FEATURE_HEAD_DIM_V;
    if (const uint32_t missing = need & ~k.features)
        return fmt::format("kernel does not support: {}", feature_names(missing));
    if (k.supports) {
        char why[256] = {0};
        if (!k.supports(&k, &p, why, sizeof why)) return why[0] ? why : "kernel's supports() declined the case";
    }
    return {};
}

}  // namespace attngate
