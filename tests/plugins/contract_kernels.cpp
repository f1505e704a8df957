// Kernels that compute a correct output (the built-in flash kernel does the maths) and
// break the ABI's contract around it: the classes of defect the contract, numerics and
// memory checks must catch and blame on the right kernel. Loaded with --plugin by the
// tests; never part of the default kernel list.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "attngate/kernel_abi.h"
#include "builtin_lookup.hpp"

namespace {

enum Fault : int {
    kWritesQ = 1,         // writes into Q (casting away const) after computing its output
    kWritesPastOut = 2,   // writes one float past the end of out
    kReadsOut = 3,        // accumulates into out without clearing it first
    kNondeterministic = 4,  // its last output element moves by an ulp on every other call
    kRetainsBig = 5,      // keeps a 2 MiB ABI allocation from its first call on
    kRetainsSmall = 6,    // keeps a 4 KiB ABI allocation from its first call on
    kOverrunsAbi = 7,     // writes one byte past an ABI allocation
    kFreesForeign = 8,    // hands the allocator a pointer it never gave
    kOneUlp = 9,          // its last output element one ulp off flash's, on every call (a numerics baseline must see it)
    kLeavesLastRow = 10,  // never writes the last head_dim_v elements of out (a tail row it forgot)
};

const attngate_kernel &flash() { return attngate::test_plugins::builtin("flash"); }

int64_t out_elements(const attngate_problem &p) { return p.batch * p.seq_q * p.heads_q * p.head_dim_v; }

int run(const attngate_kernel *self, const attngate_problem *p, char *err, size_t n) {
    const Fault fault = static_cast<Fault>(reinterpret_cast<intptr_t>(self->user));
    const attngate_kernel &f = flash();
    // The retaining kernels keep one block per allocator they were handed (the harness
    // gives each observation its own), taken on the first call with it.
    static void *kept_for[16] = {};
    static std::atomic<int64_t> calls[16];
    const int64_t call = calls[fault]++;
    if ((fault == kRetainsBig || fault == kRetainsSmall) && kept_for[fault] != p->allocator->ctx) {
        kept_for[fault] = p->allocator->ctx;
        p->allocator->alloc(p->allocator->ctx, fault == kRetainsBig ? size_t{2} << 20 : 4096);
    }
    if (fault == kOverrunsAbi) {
        auto *block = static_cast<unsigned char *>(p->allocator->alloc(p->allocator->ctx, 100));
        block[100] = 1;  // one byte past the end
        p->allocator->free(p->allocator->ctx, block);
    }
    if (fault == kFreesForeign) {
        static char not_from_the_allocator[64];
        p->allocator->free(p->allocator->ctx, not_from_the_allocator);
    }
    if (fault == kReadsOut || fault == kLeavesLastRow) {
        std::vector<float> mine(static_cast<size_t>(out_elements(*p)));
        attngate_problem q = *p;
        q.out = mine.data();
        q.instance = nullptr;
        const int rc = f.run(&f, &q, err, n);
        if (fault == kReadsOut)
            for (size_t i = 0; i < mine.size(); ++i) p->out[i] += mine[i];
        else
            std::memcpy(p->out, mine.data(), (mine.size() - static_cast<size_t>(p->head_dim_v)) * sizeof(float));
        return rc;
    }
    attngate_problem q = *p;
    q.instance = nullptr;
    const int rc = f.run(&f, &q, err, n);
    if (fault == kWritesQ) {
        if (p->dtype == ATTNGATE_DTYPE_BF16) const_cast<uint16_t *>(static_cast<const uint16_t *>(p->q))[0] ^= 0x0100;
        else const_cast<float *>(static_cast<const float *>(p->q))[0] += 1.0f;
    }
    if (fault == kWritesPastOut) p->out[out_elements(*p)] = 42.0f;
    if ((fault == kNondeterministic && call % 2 == 1) || fault == kOneUlp) {
        float &last = p->out[out_elements(*p) - 1];
        uint32_t bits;
        std::memcpy(&bits, &last, sizeof bits);
        bits ^= 1u;
        std::memcpy(&last, &bits, sizeof bits);
    }
    return rc;
}

#define CONTRACT_FAULT(name, what, fault) \
    {ATTNGATE_API_VERSION, name, "0.0.1", what, ATTNGATE_FEATURE_ALL, ATTNGATE_WORKSPACE_CONSTANT, nullptr, run, \
     reinterpret_cast<void *>(fault), nullptr, nullptr}

const attngate_kernel kKernels[] = {
    CONTRACT_FAULT("writes-q", "flash that writes into its input q after computing its output", kWritesQ),
    CONTRACT_FAULT("writes-past-out", "flash that writes one float past the end of out", kWritesPastOut),
    CONTRACT_FAULT("reads-out", "flash that accumulates into out without clearing it", kReadsOut),
    CONTRACT_FAULT("nondeterministic", "flash whose last output element moves by an ulp on every other call", kNondeterministic),
    CONTRACT_FAULT("retains-2mib", "flash that keeps a 2 MiB ABI allocation from its first call on", kRetainsBig),
    CONTRACT_FAULT("retains-4kib", "flash that keeps a 4 KiB ABI allocation from its first call on", kRetainsSmall),
    CONTRACT_FAULT("overruns-abi", "flash that writes one byte past an ABI allocation", kOverrunsAbi),
    CONTRACT_FAULT("frees-foreign", "flash that frees a pointer the allocator never gave it", kFreesForeign),
    CONTRACT_FAULT("one-ulp", "flash with its last output element one ulp off", kOneUlp),
    CONTRACT_FAULT("leaves-last-row", "flash that never writes the last row of out", kLeavesLastRow),
};

}  // namespace

extern "C" const attngate_kernel *attngate_plugin_kernels(size_t *count) {
    *count = sizeof(kKernels) / sizeof(kKernels[0]);
    return kKernels;
}
