// The set of backends of a run.
#include "backend/backend.hpp"

#include <string_view>
#include <unordered_map>

namespace attngate {

Result<void> Backends::add(std::unique_ptr<Backend> backend) {
    std::unordered_map<std::string_view, const KernelInfo *> offered;  // linear: an adapter may offer 100k kernels
    for (const KernelInfo *k : kernels()) offered.emplace(k->name, k);
    for (const auto &k : backend->kernels())
        if (const auto other = offered.find(k.name); other != offered.end())
            return fail(ErrorKind::BadInput, "{}: kernel \"{}\" is already offered by {}", k.origin, k.name, other->second->origin);
    backends_.push_back(std::move(backend));
    return {};
}

Backend *Backends::host_of(std::string_view kernel) const {
    for (const auto &b : backends_)
        for (const auto &k : b->kernels())
            if (k.name == kernel) return b.get();
    return nullptr;
}

const KernelInfo *Backends::find(std::string_view kernel) const {
    for (const auto &b : backends_)
        for (const auto &k : b->kernels())
            if (k.name == kernel) return &k;
    return nullptr;
}

std::vector<const KernelInfo *> Backends::kernels() const {
    std::vector<const KernelInfo *> out;
    for (const auto &b : backends_)
        for (const auto &k : b->kernels()) out.push_back(&k);
    return out;
}

boost::json::object Backends::fingerprint() const {
    boost::json::object out;
    for (const auto &b : backends_)
        for (const auto &[key, value] : b->fingerprint()) {
            if (auto *have = out.if_contains(key); have && have->is_object() && value.is_object())
                for (const auto &[k, v] : value.get_object()) have->get_object()[k] = v;
            else out[key] = value;
        }
    return out;
}

std::vector<std::string> Backends::load_errors() const {
    std::vector<std::string> out;
    for (const auto &b : backends_)
        for (const auto &e : b->load_errors()) out.push_back(b->name() + ": " + e);
    return out;
}

}  // namespace attngate
