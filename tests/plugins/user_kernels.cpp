// A user's plugin, as docs/kernels.md tells users to write one: a kernel with an instance
// (init/free) that delegates the maths to the built-in native kernel. Built three times: as
// "mine" (every dense feature), with ATTNGATE_TEST_PICKY as "picky" (bf16 only), which runs
// nothing of an f32 suite, and with ATTNGATE_TEST_ABI_V2 as "old-abi", a table of ABI
// version 2 (before paged KV) that still loads and is skipped on paged cases. Two later
// builds of "mine" for `ab`'s memory check (tests/e2e/plugin_builds_test.py): with
// ATTNGATE_TEST_LEAK_BYTES=N it keeps N malloc'd bytes on every call, and with
// ATTNGATE_TEST_EXTRA_SCRATCH it holds a second score-sized ABI scratch through each call.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "attngate/kernel_abi.h"
#include "builtin_lookup.hpp"

namespace {

using attngate::test_plugins::builtin;

constexpr uint64_t kMagic = 0x617474'6e676174ULL;

struct Instance {
    uint64_t magic = kMagic;
    int threads = 0;
};

void *mine_init(const attngate_kernel *, const attngate_kernel_params *params, char *, size_t) {
    auto *inst = new (std::nothrow) Instance;
    if (inst) inst->threads = params->num_threads;
    return inst;
}

void mine_free(const attngate_kernel *, void *instance) { delete static_cast<Instance *>(instance); }

int mine_run(const attngate_kernel *, const attngate_problem *p, char *err, size_t n) {
    const auto *inst = static_cast<const Instance *>(p->instance);
    if (!inst || inst->magic != kMagic) {
        std::snprintf(err, n, "run called without the instance init returned");
        return 1;
    }
    attngate_problem q = *p;
    q.instance = nullptr;
    const attngate_kernel &native = builtin("native");
#if defined(ATTNGATE_TEST_LEAK_BYTES)
    static void *volatile last_kept;  // each call's block replaces the last: the earlier ones are lost
    last_kept = std::malloc(ATTNGATE_TEST_LEAK_BYTES);
#endif
#if defined(ATTNGATE_TEST_EXTRA_SCRATCH)
    const size_t bytes = sizeof(float) * static_cast<size_t>(p->heads_q * p->seq_q * p->seq_k);
    void *scratch = p->allocator->alloc(p->allocator->ctx, bytes);
    if (!scratch) {
        std::snprintf(err, n, "scratch allocation failed");
        return 1;
    }
    std::memset(scratch, 0, bytes);
    const int rc = native.run(&native, &q, err, n);
    p->allocator->free(p->allocator->ctx, scratch);
    return rc;
#else
    return native.run(&native, &q, err, n);
#endif
}

#if defined(ATTNGATE_TEST_PICKY)
constexpr const char *kName = "picky";
constexpr uint32_t kFeatures = ATTNGATE_FEATURE_ALL & ~ATTNGATE_FEATURE_F32;
#elif defined(ATTNGATE_TEST_ABI_V2)
constexpr const char *kName = "old-abi";
constexpr uint32_t kFeatures = 0xffffffffu;  // every bit set: version 2 defined only the dense ones
#else
constexpr const char *kName = "mine";
constexpr uint32_t kFeatures = ATTNGATE_FEATURE_ALL;
#endif

#ifdef ATTNGATE_TEST_ABI_V2
constexpr uint32_t kApiVersion = 2;
#else
constexpr uint32_t kApiVersion = ATTNGATE_API_VERSION;
#endif

const attngate_kernel kKernels[] = {{
    /* .api_version = */ kApiVersion,
    /* .name        = */ kName,
    /* .version     = */ "0.1.0",
    /* .description = */ "a user's kernel with an instance, delegating to native",
    /* .features    = */ kFeatures,
    /* .workspace   = */ ATTNGATE_WORKSPACE_QUADRATIC,
    /* .supports    = */ nullptr,
    /* .run         = */ mine_run,
    /* .user        = */ nullptr,
    /* .init        = */ mine_init,
    /* .free        = */ mine_free,
}};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = 1;
    return kKernels;
}
