/* attngate kernel ABI: one attention problem and a kernel as a table of function pointers.
 *
 * Built-in kernels and users' plugins register through this same table, so a plugin is a
 * peer of ours. Plain C so that any toolchain can implement it; the harness never
 * includes anything else from a kernel.
 *
 * Tensor layout is [B, S, H, D], row-major, as JAX and the TPU kernels use it.
 *
 * Semantics every kernel implements (the reference kernel is the executable definition):
 *   score(b,h,i,j) = softcap(scale * dot(q[b,i,h,:], k[b,j,h/(Hq/Hkv),:])) + bias[b,h,i,j]
 *   softcap(s)     = cap * tanh(s / cap) when softcap > 0, else s
 *   allowed(b,i,j) = causal and window are aligned bottom-right by default: query i sits
 *                    at key position p = i + (Sk - Sq), as in a KV-cached decode step
 *                    (causal_alignment = ATTNGATE_ALIGN_TOP_LEFT: p = i, as JAX and
 *                    PyTorch align a causal mask);
 *                    causal       -> j <= p
 *                    window_left  -> j >= p - window_left   (negative: unbounded)
 *                    window_right -> j <= p + window_right  (negative: unbounded)
 *                    segment ids  -> segment_ids_q[b,i] == segment_ids_kv[b,j]
 *   out(b,i,h,:)   = sum_j softmax_j(score over allowed j) * v[b,j,h/(Hq/Hkv),:]
 * A row with no allowed key (or whose allowed scores are all -inf) outputs zeros.
 * NaN propagates: a NaN in an allowed score or value makes the outputs it feeds NaN.
 *
 * A paged problem (problem.paged non-NULL, version 3) is a batch of `batch` sequences of
 * their own lengths. Sequence b has q_len_b = cu_q_lens[b+1] - cu_q_lens[b] queries, the
 * tokens [cu_q_lens[b], cu_q_lens[b+1]) of q [seq_q, Hq, D] and out [seq_q, Hq, Dv]
 * (seq_q = cu_q_lens[batch], the batch's query tokens), and kv_len_b = kv_lens[b] keys: key
 * j of sequence b is slot j % page_size of page page_table[b * pages_per_seq + j / page_size]
 * of the pools. Within a sequence the dense semantics hold with Sq = q_len_b, Sk = kv_len_b,
 * always bottom-right: query i sits at key position kv_len_b - q_len_b + i. Slots past
 * kv_len_b, pages outside the sequence's table and the table's entries past its pages are
 * not the kernel's to read (the harness fills them with NaN and says who read them).
 */
#ifndef ATTNGATE_KERNEL_ABI_H
#define ATTNGATE_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added causal_alignment and instance to the problem and the optional
 * init/free slots to the kernel. Version 3 appended the paged KV description (paged) to the
 * problem and the PAGED_KV and RAGGED feature bits; the kernel table is unchanged, so a
 * version-2 table still loads: its features are read as version 2 defined them, and a
 * paged case is a skip for it. A table of any other version is refused by name. */
#define ATTNGATE_API_VERSION 3
#define ATTNGATE_API_VERSION_OLDEST 2 /* the oldest table the harness still loads */

/* Operand dtype of Q, K and V. The output is always float32. */
typedef enum attngate_dtype {
    ATTNGATE_DTYPE_F32 = 0,  /* float32 operands, float32 accumulation */
    ATTNGATE_DTYPE_BF16 = 1, /* bfloat16 operands (uint16 bits), f32 accumulation and
                                softmax statistics; probabilities rounded to bf16 before
                                the P·V product (the TPU MXU contract) */
} attngate_dtype;

/* Feature bits a kernel declares in attngate_kernel.features. */
enum {
    ATTNGATE_FEATURE_CAUSAL = 1u << 0,
    ATTNGATE_FEATURE_WINDOW = 1u << 1,
    ATTNGATE_FEATURE_SEGMENT_IDS = 1u << 2,
    ATTNGATE_FEATURE_BIAS = 1u << 3,
    ATTNGATE_FEATURE_SOFTCAP = 1u << 4,
    ATTNGATE_FEATURE_GQA = 1u << 5,          /* Hq != Hkv (GQA, MQA) */
    ATTNGATE_FEATURE_HEAD_DIM_V = 1u << 6,   /* value head_dim != query/key head_dim */
    ATTNGATE_FEATURE_F32 = 1u << 7,
    ATTNGATE_FEATURE_BF16 = 1u << 8,
    /* Every feature of a dense problem: all that version 2 defined. A kernel opts in to the
     * paged bits explicitly, so a plugin that declared ALL before version 3 is skipped on a
     * paged case instead of reading its NULL k and v. */
    ATTNGATE_FEATURE_ALL = (1u << 9) - 1u,
    ATTNGATE_FEATURE_PAGED_KV = 1u << 9, /* problem.paged: K and V in pages of a pool */
    ATTNGATE_FEATURE_RAGGED = 1u << 10,  /* paged, with q_len other than 1 (prefill chunks) */
    ATTNGATE_FEATURE_ALL_PAGED = ATTNGATE_FEATURE_ALL | ATTNGATE_FEATURE_PAGED_KV | ATTNGATE_FEATURE_RAGGED,
};

/* How a kernel promises its workspace (the bytes it asks the harness allocator for)
 * grows with the sequence lengths; the memory gate holds it to that promise. */
typedef enum attngate_workspace_growth {
    ATTNGATE_WORKSPACE_UNSPECIFIED = 0,    /* no promise */
    ATTNGATE_WORKSPACE_CONSTANT = 1,       /* independent of Sq and Sk (tiled kernels) */
    ATTNGATE_WORKSPACE_LINEAR = 2,         /* at most linear in Sq + Sk */
    ATTNGATE_WORKSPACE_QUADRATIC = 3,      /* up to Sq x Sk (materialised scores) */
} attngate_workspace_growth;

/* Where query row i sits among the keys for causal masking and windows. */
typedef enum attngate_causal_alignment {
    ATTNGATE_ALIGN_BOTTOM_RIGHT = 0, /* p = i + Sk - Sq (FlashAttention 2.1+, KV cache) */
    ATTNGATE_ALIGN_TOP_LEFT = 1,     /* p = i (jnp.tril, torch's is_causal) */
} attngate_causal_alignment;

/* Memory the harness hands to kernels for their workspace; the harness counts every
 * byte, so a kernel that uses it makes its memory visible to the gate. */
typedef struct attngate_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t bytes); /* 64-byte aligned; NULL on failure */
    void (*free)(void *ctx, void *ptr);      /* ptr may be NULL */
} attngate_allocator;

/* A paged KV cache: K and V in fixed-size pages of two pools, reached per sequence through
 * a page table (vLLM's block tables; JAX's page_indices). */
typedef struct attngate_paged_kv {
    const void *k_pages;       /* [num_pages, page_size, Hkv, D]  dtype */
    const void *v_pages;       /* [num_pages, page_size, Hkv, Dv] dtype */
    const int32_t *page_table; /* [batch, pages_per_seq]; entries past a sequence's pages are padding */
    const int32_t *kv_lens;    /* [batch], each >= 1 */
    const int32_t *cu_q_lens;  /* [batch + 1], cu_q_lens[0] = 0: cumulative query counts, each q_len >= 1 */
    int64_t num_pages;         /* pages in each pool */
    int64_t page_size;         /* slots per page */
    int64_t pages_per_seq;     /* the page table's row length */
} attngate_paged_kv;

typedef struct attngate_problem {
    int64_t batch;      /* B */
    int64_t seq_q;      /* Sq */
    int64_t seq_k;      /* Sk */
    int64_t heads_q;    /* Hq */
    int64_t heads_kv;   /* Hkv, Hq % Hkv == 0 */
    int64_t head_dim;   /* D of Q and K */
    int64_t head_dim_v; /* Dv of V and the output */
    attngate_dtype dtype;

    float scale;          /* softmax scale, the harness fills 1/sqrt(D) by default */
    float softcap;        /* > 0: cap * tanh(s / cap); 0: off */
    int32_t causal;       /* non-zero: causal */
    int32_t causal_alignment; /* attngate_causal_alignment, for causal and window */
    int64_t window_left;  /* < 0: unbounded */
    int64_t window_right; /* < 0: unbounded */

    const void *q; /* [B, Sq, Hq, D]  dtype */
    const void *k; /* [B, Sk, Hkv, D] dtype */
    const void *v; /* [B, Sk, Hkv, Dv] dtype */
    const float *bias;      /* optional, shape bias_shape broadcast to [B, Hq, Sq, Sk] */
    int64_t bias_shape[4];  /* each dim 1 or the full extent */
    const int32_t *segment_ids_q;  /* optional [B, Sq]; both or neither */
    const int32_t *segment_ids_kv; /* optional [B, Sk] */
    float *out;                    /* [B, Sq, Hq, Dv] float32 */

    int64_t block_q; /* tiling hints for blocked kernels; <= 0: the kernel's default */
    int64_t block_k;

    const attngate_allocator *allocator; /* never NULL when the harness calls run */
    void *instance; /* what the kernel's init returned; NULL when it has no init */

    /* Version 3. NULL: a dense problem. Otherwise a paged one (see the top of this file):
     * q and out are [seq_q, Hq, *] over the batch's query tokens, seq_k is the longest
     * kv_len, k, v, bias and segment ids are NULL, causal_alignment is bottom-right. */
    const attngate_paged_kv *paged;
} attngate_problem;

/* What the harness asks of a kernel instance when it calls init. */
typedef struct attngate_kernel_params {
    int32_t num_threads; /* threads the kernel may use; <= 0: its default (all cores) */
    const char *options; /* kernel-specific settings as a JSON object, or NULL */
} attngate_kernel_params;

typedef struct attngate_kernel {
    uint32_t api_version;    /* ATTNGATE_API_VERSION (or 2, see above) */
    const char *name;        /* unique, [a-z0-9_-] */
    const char *version;     /* the kernel's own version, recorded in results */
    const char *description; /* one line */
    uint32_t features;       /* ATTNGATE_FEATURE_* bits */
    uint32_t workspace_growth; /* attngate_workspace_growth */
    /* (optional) finer check than the feature bits; returns non-zero when supported,
     * otherwise writes why into why[0..why_len). */
    int (*supports)(const struct attngate_kernel *self, const attngate_problem *p,
                    char *why, size_t why_len);
    /* Computes p->out. Returns 0 on success, otherwise writes a message into err. */
    int (*run)(const struct attngate_kernel *self, const attngate_problem *p, char *err,
               size_t err_len);
    void *user; /* the kernel's own data */
    /* (optional) Makes an instance that holds what should live across calls (a thread
     * pool, a device, a compiled program); the harness passes it as problem.instance to
     * every run and hands it to free at the end. Returns NULL on failure and writes why
     * into err. Without init, problem.instance is NULL. */
    void *(*init)(const struct attngate_kernel *self, const attngate_kernel_params *params,
                  char *err, size_t err_len);
    /* (optional) Releases what init returned. */
    void (*free)(const struct attngate_kernel *self, void *instance);
} attngate_kernel;

/* What a plugin shared library exports: its kernels, count written to *count. */
typedef const attngate_kernel *(*attngate_plugin_entry_fn)(size_t *count);
#define ATTNGATE_PLUGIN_ENTRY "attngate_plugin_kernels"

/* The built-in kernels (reference, native, flash, flash-decode). */
const attngate_kernel *attngate_builtin_kernels(size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* ATTNGATE_KERNEL_ABI_H */
