// A broken build of the user's kernel "mine" (tests/plugins/user_kernels.cpp): the same name,
// and an output 1% too large. tests/e2e/ab_plugins_test.py builds it to give `ab --a-plugin
// --b-plugin` a side B that fails its goldens.
#include <cstddef>
#include <cstdint>

#include "attngate/kernel_abi.h"
#include "builtin_lookup.hpp"

namespace {

int wrong_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {
    const attngate_kernel &native = attngate::test_plugins::builtin("native");
    if (const int rc = native.run(&native, p, err, n); rc != 0) return rc;
    const int64_t rows = p->paged ? p->seq_q : p->batch * p->seq_q;  // paged: the batch's query tokens
    for (int64_t i = 0; i < rows * p->heads_q * p->head_dim_v; ++i) p->out[i] *= 1.01f;
    return 0;
}

const attngate_kernel kKernels[] = {{
    /* .api_version = */ ATTNGATE_API_VERSION,
    /* .name        = */ "mine",
    /* .version     = */ "0.1.0",
    /* .description = */ "the user's kernel with a bug: its output 1% too large",
    /* .features    = */ ATTNGATE_FEATURE_ALL,
    /* .workspace   = */ ATTNGATE_WORKSPACE_QUADRATIC,
    /* .supports    = */ nullptr,
    /* .run         = */ wrong_run,
    /* .user        = */ nullptr,
    /* .init        = */ nullptr,
    /* .free        = */ nullptr,
}};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = 1;
    return kKernels;
}
