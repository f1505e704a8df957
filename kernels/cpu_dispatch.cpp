// Run-time detection of the CPU's vector extensions for the kernels' dispatch.
#include "cpu_dispatch.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace attngate::kernels {

Isa detected_isa() {
    // __builtin_cpu_supports reads cpuid once and also checks that the OS saves the wide
    // registers (XGETBV), which a bare cpuid test would miss.
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return Isa::Portable;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vl")))
        return Isa::Avx2;
    if (!__builtin_cpu_supports("avx512bf16")) return Isa::Avx512;
    return Isa::Avx512Bf16;
}

namespace {

Isa isa_from_env(Isa best) {
    const char *v = std::getenv("ATTNGATE_KERNEL_ISA");
    if (!v || !*v) return best;
    for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
        if (std::strcmp(v, isa_name(isa)) == 0) return isa < best ? isa : best;
    return best;  // an unknown name forces nothing
}

std::atomic<int> &limit() {
    static std::atomic<int> l{static_cast<int>(isa_from_env(Isa::Avx512Bf16))};
    return l;
}

}  // namespace

Isa active_isa() {
    static const Isa best = detected_isa();
    const Isa lim = static_cast<Isa>(limit().load(std::memory_order_relaxed));
    return lim < best ? lim : best;
}

void set_isa_limit(Isa isa) { limit().store(static_cast<int>(isa), std::memory_order_relaxed); }

const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::Portable: return "portable";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Avx512Bf16: return "avx512bf16";
    }
    return "?";
}

}  // namespace attngate::kernels
