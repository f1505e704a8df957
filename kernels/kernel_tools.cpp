// The kernels' C++ tools for the bench and tests (attngate/kernel_tools.hpp).
#include "attngate/kernel_tools.hpp"

#include <algorithm>
#include <vector>

#include "cpu_dispatch.hpp"
#include "thread_pool.hpp"

namespace attngate::kernels {

std::string active_path() { return isa_name(active_isa()); }
std::string detected_path() { return isa_name(detected_isa()); }

bool limit_path(const std::string &name) {
    for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
        if (name == isa_name(isa)) {
            set_isa_limit(isa);
            return true;
        }
    return false;
}

int default_threads() { return available_cpus(); }

}  // namespace attngate::kernels
