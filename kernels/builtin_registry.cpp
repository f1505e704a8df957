// The registry of built-in kernels: one explicit list, no static-initialiser magic.
#include "attngate/kernel_abi.h"

namespace attngate::kernels {
extern const attngate_kernel reference_kernel;
extern const attngate_kernel native_kernel;
extern const attngate_kernel flash_kernel;
extern const attngate_kernel flash_decode_kernel;
}  // namespace attngate::kernels

extern "C" const attngate_kernel *attngate_builtin_kernels(size_t *count) {
    static const attngate_kernel table[] = {
        attngate::kernels::reference_kernel,
        attngate::kernels::native_kernel,
        attngate::kernels::flash_kernel,
        attngate::kernels::flash_decode_kernel,
    };
    *count = sizeof(table) / sizeof(table[0]);
    return table;
}
