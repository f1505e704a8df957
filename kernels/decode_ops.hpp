// The products of the flash-decode kernel, one table per instruction-set path: Q K^T of a
// few query rows against keys and acc += P V, over K and V rows wherever they lie (a pointer
// per key: pages of a pool, or a dense tensor). Each K and V row is loaded and widened once
// per call for all the query rows it serves (the GQA group), so a decode step reads each KV
// byte once.
#pragma once

#include <cstdint>

#include "attngate/kernel_abi.h"
#include "cpu_dispatch.hpp"

namespace attngate::kernels {

/// The rows of the key block to come, which the products ask the memory for as they read
/// the current one: one line of the next block for each line (64 bytes) of this one that a
/// step read, so the fetch runs at the rate the arithmetic consumes, overlapping it, and the
/// whole next block has been asked for by the time it starts (a burst of prefetches at the
/// block's start stalled the products). K rows, then V rows, each run of bytes contiguous.
struct PrefetchQueue {
    const unsigned char *const *k = nullptr, *const *v = nullptr;
    int64_t rows = 0;  ///< of each
    size_t k_bytes = 0, v_bytes = 0;
    int64_t at = 0;     ///< rows done: [0, rows) are K's, [rows, 2 rows) V's
    size_t offset = 0;  ///< into the current row
    size_t credit = 0;  ///< bytes read and not yet matched by a line asked for

    /// Makes the queue the rows of the block after the one starting now, none asked for yet.
    void next_block(const unsigned char *const *k_rows, const unsigned char *const *v_rows, int64_t n) {
        k = k_rows, v = v_rows, rows = n, at = 0, offset = 0, credit = 0;
    }
    /// Asks for the next `lines` lines (64 bytes) of the queue, fewer when it runs out.
    void pump(int64_t lines) {
        for (; lines > 0 && at < 2 * rows; --lines) {
            const bool value = at >= rows;
            __builtin_prefetch((value ? v[at - rows] : k[at]) + offset, 0, 3);
            offset += 64;
            if (offset >= (value ? v_bytes : k_bytes)) offset = 0, ++at;
        }
    }
    /// A step read `bytes` of the current block: asks for as many of the next one.
    void read(size_t bytes) {
        credit += bytes;
        pump(static_cast<int64_t>(credit / 64));
        credit %= 64;
    }
    void drain() { pump(1 << 30); }
};

/// Query rows and accumulators are "prepared": floats in a path-specific order within chunks
/// of `chunk` elements (bf16 rows are widened even and odd elements apart, which costs two
/// instructions per vector), zero-padded to padded(d). prepare and emit convert.
struct DecodeOps {
    int64_t chunk;
    /// dst[0 .. padded(d)) = the q row (d elements of dtype) in prepared order.
    void (*prepare)(const void *q, attngate_dtype dtype, int64_t d, float *dst);
    /// out[0 .. dv) = acc (prepared order) / l.
    void (*emit)(const float *acc, attngate_dtype dtype, int64_t dv, float l, float *out);
    /// s[r * lds + j] = q_r . K_j for r < m, j < n: q rows prepared, ldq floats apart; K row j
    /// (d elements of dtype) at k[j] + off bytes.
    void (*qk)(int64_t m, int64_t n, int64_t d, const float *q, int64_t ldq, const unsigned char *const *k, size_t off,
               attngate_dtype dtype, float *s, int64_t lds, PrefetchQueue *pf);
    /// acc_r += sum_j p[r * ldp + j] V_j for r < m, j < n: V row j (dv elements) at v[j] + off
    /// bytes; acc rows prepared, lda floats apart.
    void (*pv)(int64_t m, int64_t n, int64_t dv, const float *p, int64_t ldp, const unsigned char *const *v, size_t off,
               attngate_dtype dtype, float *acc, int64_t lda, PrefetchQueue *pf);

    int64_t padded(int64_t d) const { return (d + chunk - 1) / chunk * chunk; }
};

/// A multiple of every path's chunk (portable 2, avx2 16, avx512 32). Scratch rows are laid
/// out padded to it on every path, so that a call's workspace, and with it the memory gate's
/// peak (one baseline for every machine), does not depend on the CPU the kernel runs on.
constexpr int64_t kWidestChunk = 32;
inline int64_t padded_for_every_path(int64_t d) { return (d + kWidestChunk - 1) / kWidestChunk * kWidestChunk; }

/// The table of a path; a path the build lacks falls back to the next lower one.
const DecodeOps &decode_ops(Isa isa);
const DecodeOps &decode_ops_portable();
const DecodeOps &decode_ops_avx2();
const DecodeOps &decode_ops_avx512();

}  // namespace attngate::kernels
