// The test plugins wrap built-in kernels: find one by name in the built-in table.
#pragma once

#include <cstdlib>
#include <cstring>

#include "attngate/kernel_abi.h"

namespace attngate::test_plugins {

/// The built-in kernel called `name`; aborts when there is none (a broken test build).
inline const attngate_kernel &builtin(const char *name) {
    size_t n = 0;
    const attngate_kernel *t = attngate_builtin_kernels(&n);
    for (size_t i = 0; i < n; ++i)
        if (std::strcmp(t[i].name, name) == 0) return t[i];
    std::abort();
}

}  // namespace attngate::test_plugins
