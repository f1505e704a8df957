// The in-process backend: the built-in kernels and --plugin shared libraries, called
// through the C ABI in a forked child per case x kernel (crash and hang isolation), or in
// this process with isolation off.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/kernel_registry.hpp"

namespace attngate {

/// The path the built-in kernels' outputs follow, on which their bits depend: the
/// instruction-set path ("portable", "avx2", "avx512", "avx512bf16"), with "+vdpbf16ps" where
/// bf16 products run on it rather than widened to f32.
std::string builtin_numerics_path();

class InProcessBackend final : public Backend {
public:
    /// The built-in kernels plus the given plugins; a plugin that cannot load is an error naming it.
    static Result<std::unique_ptr<InProcessBackend>> create(const std::vector<std::string> &plugins);

    std::string name() const override { return "in-process"; }
    const std::vector<KernelInfo> &kernels() const override { return infos_; }
    std::string unsupported(const Invocation &inv, double timeout_s) override;
    Observation observe(const Invocation &inv, const ObserveRequest &req) override;
    std::vector<TimingOutcome> time(const std::vector<Invocation> &invs, const TimingRequest &req) override;
    boost::json::object fingerprint() const override { return {}; }

    const KernelRegistry &registry() const { return registry_; }

private:
    explicit InProcessBackend(KernelRegistry registry);
    const attngate_kernel &table_of(const Invocation &inv) const;

    KernelRegistry registry_;
    std::vector<KernelInfo> infos_;
};

}  // namespace attngate
