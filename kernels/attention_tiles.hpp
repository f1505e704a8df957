// Machinery the fast kernels (flash, native) share: the instance and its threads, scratch
// carved from the harness allocator, tile masks, score finishing and operand rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "attention_common.hpp"
#include "row_ops.hpp"
#include "thread_pool.hpp"

namespace attngate::kernels {

/// What init returns for flash and native: what lives across calls, the thread pool.
struct KernelInstance {
    explicit KernelInstance(int threads) : pool(threads) {}
    ThreadPool pool;
};

/// The init and free slots of flash and native. num_threads <= 0: every CPU this process
/// may run on.
void *instance_init(const attngate_kernel *, const attngate_kernel_params *params, char *err, size_t err_len);
void instance_free(const attngate_kernel *, void *instance);

/// The problem's thread pool, or null when run() was called without init: then the
/// kernel runs single-threaded in the caller's thread.
inline ThreadPool *pool_of(const attngate_problem &p) {
    return p.instance ? &static_cast<KernelInstance *>(p.instance)->pool : nullptr;
}

/// Workers a loop of `tasks` tasks uses (worker ids are below this).
inline int workers_for(const ThreadPool *pool, int64_t tasks) {
    return static_cast<int>(std::clamp<int64_t>(tasks, 1, pool ? pool->size() : 1));
}

/// Runs fn(task, worker) for every task, on the pool or inline.
template <typename Fn>
void for_each_task(ThreadPool *pool, int64_t count, Fn &&fn) {
    if (pool) pool->run(count, fn);
    else
        for (int64_t t = 0; t < count; ++t) fn(t, 0);
}

/// Offsets of 64-byte aligned pieces in one worker's scratch.
class ScratchLayout {
public:
    size_t add(int64_t count, size_t elem) {
        const size_t at = size_;
        size_ += (static_cast<size_t>(std::max<int64_t>(count, 0)) * elem + 63) / 64 * 64;
        return at;
    }
    size_t size() const { return std::max<size_t>(size_, 64); }

private:
    size_t size_ = 0;
};

/// Scratch for `workers` workers in one allocation from the harness allocator (so the
/// harness counts it), freed on scope exit.
class WorkerScratch {
public:
    WorkerScratch(const attngate_allocator *a, int workers, size_t bytes_per_worker)
        : a_(a), stride_(bytes_per_worker),
          raw_(static_cast<unsigned char *>(a->alloc(a->ctx, static_cast<size_t>(workers) * bytes_per_worker + 64))) {}
    ~WorkerScratch() { a_->free(a_->ctx, raw_); }
    WorkerScratch(const WorkerScratch &) = delete;
    WorkerScratch &operator=(const WorkerScratch &) = delete;
    bool ok() const { return raw_ != nullptr; }
    template <typename T>
    T *at(int worker, size_t offset) const {
        auto base = reinterpret_cast<uintptr_t>(raw_);
        base = (base + 63) / 64 * 64;
        return reinterpret_cast<T *>(base + static_cast<size_t>(worker) * stride_ + offset);
    }

private:
    const attngate_allocator *a_;
    size_t stride_;
    unsigned char *raw_;
};

/// How the mask covers a tile of rows [q0, q1) x keys [k0, k1).
enum class TileMask {
    Skip,     ///< no pair survives: the tile is not computed at all
    Full,     ///< every pair survives causal, window and segments: no masking work
    Partial,  ///< some pairs are masked
};
TileMask classify_tile(const ProblemView &view, int64_t b, int64_t q0, int64_t q1, int64_t k0, int64_t k1);

/// Turns row i's raw dots s[0..n) for keys [k0, k0 + n) into scores: scale, softcap,
/// bias, then -inf where the mask removes the key (only when `partial`).
void finish_row(const ProblemView &view, const RowOps &ops, float *s, int64_t b, int64_t h, int64_t i, int64_t k0,
                int64_t n, bool partial);

/// Rows of an operand as float: a pointer and a row stride. f32 operands are read where
/// they lie; bf16 rows are widened into buf (row stride `dim`).
struct Rows {
    const float *data;
    int64_t ld;
};
Rows operand_rows(const void *tensor, attngate_dtype dtype, int64_t first, int64_t rows, int64_t dim, int64_t stride,
                  float *buf, const RowOps &ops);

/// The row operations of the active instruction-set path.
const RowOps &active_row_ops();

struct PairGemm;
/// The bf16 pair-product microkernels of the active path (vdpbf16ps), or null where the
/// CPU lacks AVX-512 BF16 (bf16 then goes to BLAS, widened). Tests can ask for the
/// emulated microkernels on any CPU (kernel_tools.hpp).
const PairGemm *active_pair_gemm();

}  // namespace attngate::kernels
