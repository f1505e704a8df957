// The kernels a run can use: the built-ins plus plugins loaded from shared libraries
// that export attngate_plugin_kernels (the same ABI table as ours).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attngate/kernel_abi.h"
#include "io/error.hpp"

namespace attngate {

class KernelRegistry {
public:
    /// A registry holding the built-in kernels.
    static KernelRegistry with_builtins();

    /// dlopen()s a plugin and registers its kernels; names must stay unique.
    Result<void> load_plugin(const std::filesystem::path &path);

    const attngate_kernel *find(std::string_view name) const;
    const std::vector<const attngate_kernel *> &all() const { return kernels_; }
    /// Where each kernel came from ("built-in" or the plugin's path), in all() order.
    const std::vector<std::string> &origins() const { return origins_; }
    /// "reference, native, flash" for error messages.
    std::string names() const;

private:
    Result<void> add(const attngate_kernel *k, const std::string &origin);

    struct DlClose {
        void operator()(void *h) const;
    };
    std::vector<std::unique_ptr<void, DlClose>> plugins_;
    std::vector<const attngate_kernel *> kernels_;
    std::vector<std::string> origins_;
};

}  // namespace attngate
