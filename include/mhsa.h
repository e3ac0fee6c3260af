/* mhsa — multi-head self-attention for CPUs.
 *
 * The public C11 API. Everything here follows the contract in the project's
 * API document: names, argument order and meanings are fixed; new functions,
 * enum values and struct fields are only ever added (struct fields at the
 * end). The header is grouped by subject:
 *   Status and errors     mhsa_status, mhsa_last_error, mhsa_version
 *   Kernel dispatch       mhsa_select_isa (or MHSA_ISA=...), mhsa_active_isa
 *   Element types         mhsa_dtype: F32, F16, BF16
 *   The attention block   mhsa_config, weights (fp32 or 16-bit), its config
 *   Workspace, forward and backward
 *                         per-thread scratch; mhsa_forward(_ex) (ragged
 *                         batches by key padding), mhsa_grads, mhsa_backward
 *   KV cache              mhsa_kv_cache_create(_ex) (F32, F16 or BF16 K and
 *                         V), cache slots, mhsa_forward_cached(_ex)
 *   Weight files          safetensors load (every name set) and save
 * The 0.1 calls mhsa_forward, mhsa_forward_cached, mhsa_kv_cache_create and
 * mhsa_block_save_safetensors are shorthands of the _ex calls of 0.2 with
 * the additions off; each one's comment says which. docs/api.md lists the
 * calls by subject and marks what goes beyond the API document.
 *
 * Conventions
 * - Every tensor is caller-owned, row-major, contiguous fp32. Shapes are
 *   written outermost first: (B, T, D) means x[(b*T + t)*D + d].
 * - B batch, T sequence length, D = d_model, H = n_heads, dh = D / H.
 * - Linear layers follow PyTorch: y = x @ W^T + b, W stored (out, in).
 * - Weights use torch.nn.MultiheadAttention's layout: w_qkv = in_proj_weight
 *   (3D, D) = rows [Wq; Wk; Wv], b_qkv = in_proj_bias (3D),
 *   w_out = out_proj.weight (D, D), b_out = out_proj.bias (D). With
 *   grouped-query heads (n_kv_heads = Hkv < H) K and V have Hkv heads of dh
 *   features: w_qkv is ((H + 2*Hkv)*dh, D) = rows [Wq (D rows); Wk (Hkv*dh);
 *   Wv (Hkv*dh)] and b_qkv ((H + 2*Hkv)*dh); mhsa_grads follows the same
 *   shapes. With Hkv = H this is in_proj_weight exactly.
 * - A function that can fail returns mhsa_status. On failure nothing the
 *   caller passed in is modified and every object stays usable;
 *   mhsa_last_error() names the bad argument and its value.
 * - Results are bitwise identical whatever the number of OpenMP threads.
 * - Every *_destroy, *_reset and *_zero function accepts NULL as a no-op.
 *
 * Threads: a block may be shared read-only by many threads, each with its
 * own workspace and KV cache. Inside a call the library uses OpenMP; set
 * OMP_NUM_THREADS (or omp_set_num_threads) to choose how many threads.
 */
#ifndef MHSA_H
#define MHSA_H

#include <stddef.h>
#include <stdint.h>

/* MHSA_API marks the functions the shared library exports: it is built
 * with hidden symbol visibility, so these declarations (here and in
 * mhsa_train.h) are its whole interface and nothing internal leaks out. */
#ifndef MHSA_API
#if defined(__GNUC__) || defined(__clang__)
#define MHSA_API __attribute__((visibility("default")))
#else
#define MHSA_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and errors ------------------------------------------------- */

typedef enum mhsa_status {
    MHSA_OK = 0,
    MHSA_ERR_INVALID_ARG,  /* NULL pointer, non-positive size, bad enum */
    MHSA_ERR_SHAPE,        /* D % H != 0, T > max_seq_len, cache full, ... */
    MHSA_ERR_NO_MEMORY,    /* allocation failed, or a size overflows size_t */
    MHSA_ERR_UNSUPPORTED,  /* e.g. forcing an ISA this CPU or build lacks */
    MHSA_ERR_STATE,        /* e.g. backward with no recorded forward */
    MHSA_ERR_IO,           /* file could not be read or written */
    MHSA_ERR_FORMAT        /* file is not valid for what was asked */
} mhsa_status;

/* A static name for a status ("MHSA_OK", ...); never NULL, also for values
 * outside the enum. */
MHSA_API const char *mhsa_status_str(mhsa_status s);
/* The calling thread's last error message, one line; "" when none. Like
 * errno, a successful call does not clear it. */
MHSA_API const char *mhsa_last_error(void);
/* The library version, "MAJOR.MINOR.PATCH". */
MHSA_API const char *mhsa_version(void);

/* ---- Kernel dispatch --------------------------------------------------- */

typedef enum mhsa_isa {
    MHSA_ISA_AUTO = 0,  /* best the CPU supports (the default) */
    MHSA_ISA_SCALAR,
    MHSA_ISA_AVX2,      /* AVX2 + FMA */
    MHSA_ISA_NEON,
    MHSA_ISA_AVX512 = 4 /* AVX-512 F, BW, VL, DQ (+ FMA) */
} mhsa_isa;

/* Process-wide choice of kernels. MHSA_ERR_UNSUPPORTED (active ISA left
 * unchanged) if this build or CPU lacks it; MHSA_ERR_INVALID_ARG for a value
 * outside the enum. Call it before other threads use the library.
 * The environment variable MHSA_ISA=scalar|avx2|avx512|neon|auto sets the
 * choice at first use; an unknown or unavailable value falls back to auto.
 * AVX-512 needs CPUID AVX-512 F, BW, VL and DQ and the OS saving opmask and
 * ZMM state (XGETBV bits 1, 2, 5, 6, 7); auto prefers it where available. */
MHSA_API mhsa_status mhsa_select_isa(mhsa_isa isa);
/* The ISA in use; never MHSA_ISA_AUTO. */
MHSA_API mhsa_isa    mhsa_active_isa(void);
/* "auto", "scalar", "avx2", "neon", "avx512"; "unknown" for a value outside
 * the enum. */
MHSA_API const char *mhsa_isa_name(mhsa_isa isa);
/* What the library chose on this machine and why, as text of a few lines
 * (what `mhsa-info` prints): the version, the active and available ISAs
 * and those this build has but the CPU cannot run, the CPU and its
 * features, the bf16 tile set and the reason for it, the cache sizes and
 * each runnable table's GEMM blocking. Like snprintf: writes at most cap
 * bytes of it into buf, NUL-terminated when cap > 0 (buf may be NULL when
 * cap is 0), and returns the length of the whole report. The first call
 * may run the one-time bf16 measurement (at most a few milliseconds). The
 * wording is for people and may change between versions. */
MHSA_API size_t      mhsa_describe(char *buf, size_t cap);

/* ---- Element types ---------------------------------------------------- */

/* The storage types of weights (mhsa_config.weight_dtype), of the KV cache
 * (mhsa_kv_config.dtype) and the compute type (mhsa_config.compute_dtype). */
typedef enum mhsa_dtype { MHSA_F32 = 0, MHSA_F16, MHSA_BF16 } mhsa_dtype;

/* ---- The attention block ----------------------------------------------- */

/* The block's shape and its attention rule. Fields a caller leaves 0 (as a
 * 0.1 caller does, who never names the 0.2 fields) give 0.1's block, bit for
 * bit. Invalid values fail mhsa_block_create with MHSA_ERR_INVALID_ARG
 * naming the field, except the divisibility rules (MHSA_ERR_SHAPE). */
typedef struct mhsa_config {
    int d_model;      /* D > 0 */
    int n_heads;      /* H > 0, D % H == 0 */
    int max_seq_len;  /* largest T (and largest KV-cache length) */
    int causal;       /* 1: position t attends to positions <= t only */
    int bias;         /* 1: b_qkv and b_out exist */
    /* Added in 0.2; zero for each means "as in 0.1", bit for bit. */
    /* Grouped-query attention: query head h uses kv head h / (H / Hkv);
     * Hkv = 1 is multi-query. The weights' shapes (see Conventions), the
     * gradients, mhsa_block_init_random (its Xavier bound from the whole
     * w_qkv shape) and the KV cache (H/Hkv times less memory) follow Hkv. */
    int   n_kv_heads;        /* Hkv; 0 means H. >= 0; H % Hkv == 0 (else
                                MHSA_ERR_SHAPE) */
    /* Rotary position embedding (rope_dim = R > 0): after the projection
     * (bias included) and before any scaling or caching, the first R
     * features of every query and key head vector x at absolute position p
     * are rotated pair by pair: for i < R/2, a = p * theta^(-2i/R), and the
     * pair (u, v) becomes (u cos a - v sin a, u sin a + v cos a). The block
     * computes the angles in double once, for every p < max_seq_len. p is t
     * in mhsa_forward(_ex) and the sequence's cached length plus t in the
     * cached calls. */
    int   rope_dim;          /* 0: no rotary embedding; else even, 2..dh */
    float rope_theta;        /* 0 means 10000; finite and >= 0 */
    int   rope_interleaved;  /* 0: pairs (x[i], x[i + R/2]) (GPT-NeoX,
                                Hugging Face Llama); 1: pairs (x[2i],
                                x[2i+1]) (GPT-J, Meta's Llama) */
    /* Sliding window: a key outside it is blocked like a masked one, and
     * never read. */
    int   window;            /* 0: none; W > 0 (causal blocks only): key j
                                is seen by position p only if p-W < j <= p */
    /* Added in 0.3 (0 means as before). */
    int   weight_dtype;      /* an mhsa_dtype: MHSA_F32 (0), MHSA_F16 or
                                MHSA_BF16: how w_qkv and w_out are stored
                                (see "16-bit weights" below) */
    /* BF16 compute: with MHSA_BF16 every matrix product of the block (the
     * Q/K/V and output projections, Q K^T and P V; forward, backward and
     * cached) takes its operands rounded to bfloat16 (round to nearest
     * even; weights as stored when weight_dtype is MHSA_BF16) and
     * accumulates in fp32. Scaling, masks, the softmax and its statistics,
     * RoPE, biases, the KV cache's storage and every output stay fp32.
     * Results are within 2e-2 of the MHSA_F32 block, bitwise identical
     * across thread counts on each ISA; where the CPU has no bf16
     * dot-product instructions the products are exact fp32 products of the
     * rounded operands. MHSA_F16 or any other value: MHSA_ERR_INVALID_ARG
     * naming compute_dtype. */
    int   compute_dtype;     /* an mhsa_dtype: MHSA_F32 (0) or MHSA_BF16 */
} mhsa_config;

typedef struct mhsa_block mhsa_block;

/* Creates a block with all weights zero. Errors: cfg or out NULL, a
 * non-positive size, causal/bias/rope_interleaved not 0 or 1, a negative
 * n_kv_heads or window, a rope_dim that is odd, negative or > dh, a
 * rope_theta negative, NaN or infinite, a window on a non-causal block:
 * MHSA_ERR_INVALID_ARG naming the field; D % H != 0 or H % Hkv != 0:
 * MHSA_ERR_SHAPE; sizes that overflow: MHSA_ERR_NO_MEMORY.
 * *out receives a new block owned by the caller (free it with
 * mhsa_block_destroy); *out is untouched on failure. The configuration is
 * copied. Memory: the weights (the shapes of Conventions: 4*D*D + 4*D floats
 * when Hkv = H and bias = 1), one packed copy of w_qkv and w_out, and with
 * RoPE two tables of max_seq_len * rope_dim/2 floats (cos and sin). */
MHSA_API mhsa_status mhsa_block_create(const mhsa_config *cfg, mhsa_block **out);
/* Frees the block. Workspaces, caches and gradients made for it must not be
 * used with it afterwards (destroy them too). NULL is a no-op. */
MHSA_API void        mhsa_block_destroy(mhsa_block *blk);
/* Copies the weights in (shapes above; the caller keeps ownership) and packs
 * them for the GEMM once. b_qkv and b_out are required when bias == 1 and
 * ignored (may be NULL) when bias == 0. Errors: blk or a required pointer
 * NULL: MHSA_ERR_INVALID_ARG. Not thread-safe against concurrent use of the
 * same block; a workspace's recorded forward no longer matches afterwards
 * (mhsa_backward then returns MHSA_ERR_STATE). */
MHSA_API mhsa_status mhsa_block_set_weights(mhsa_block *blk,
                                            const float *w_qkv, const float *b_qkv,
                                            const float *w_out, const float *b_out);
/* Copies the weights out into caller buffers of the shapes above; the same
 * pointer rules as mhsa_block_set_weights. Safe to call concurrently with
 * forwards on the same block. */
MHSA_API mhsa_status mhsa_block_get_weights(const mhsa_block *blk,
                                            float *w_qkv, float *b_qkv,
                                            float *w_out, float *b_out);
/* w_qkv (as one matrix of its whole shape) and w_out Xavier-uniform, biases
 * zero, as torch.nn.MultiheadAttention initialises; the same bits from the
 * same seed on every platform. blk NULL: MHSA_ERR_INVALID_ARG. */
MHSA_API mhsa_status mhsa_block_init_random(mhsa_block *blk, uint64_t seed);

/* 16-bit weights: with weight_dtype MHSA_F16 or MHSA_BF16 the block stores w_qkv and w_out
 * rounded to that type (round to nearest even; beyond the F16 range +-inf)
 * whenever they are set (mhsa_block_set_weights, _load_safetensors,
 * _init_random); biases stay fp32. Every computation uses the rounded
 * weights in fp32 arithmetic, converted in registers as they are read: the
 * results equal those of an MHSA_F32 block given the same weights rounded
 * first (within 1e-4; bitwise identical across thread counts), and
 * mhsa_backward gives the gradients of that rounded block (fp32).
 * mhsa_block_get_weights returns the rounded values as fp32. Saving writes
 * the weights as F16 / BF16 tensors; loading an F16 / BF16 tensor into any
 * block is exact. An unknown weight_dtype: MHSA_ERR_INVALID_ARG naming it.
 * Memory: a 16-bit block holds its weights once, 2 bytes each; an F32 block
 * holds them as given and once more packed for the GEMM (8 bytes each). */

/* The bytes the stored weights and biases take (the weights once, in their
 * stored type: about half of MHSA_F32's for MHSA_F16 / MHSA_BF16; an F32
 * block's packed copy is not counted). 0 for NULL. */
MHSA_API size_t mhsa_block_weight_bytes(const mhsa_block *blk);

/* The configuration the block was created with; NULL for NULL. (An
 * addition to the API document's contract, as is
 * mhsa_workspace_create_sized.) */
MHSA_API const mhsa_config *mhsa_block_config(const mhsa_block *blk);

/* ---- Workspace, forward and backward ------------------------------------ */

typedef struct mhsa_workspace mhsa_workspace;

/* Scratch and saved activations for batches of up to max_batch sequences of
 * up to the block's max_seq_len tokens (B > max_batch: MHSA_ERR_SHAPE). One
 * workspace per thread of the caller; a block may be shared read-only by many
 * threads, each with its own workspace. Memory is O(max_batch * max_seq_len *
 * D) (plus small per-thread tiles): no T x T buffer is ever held. */
/* Errors: blk or out NULL, max_batch < 1: MHSA_ERR_INVALID_ARG; a size
 * that overflows, or memory that cannot be had: MHSA_ERR_NO_MEMORY (up
 * front; nothing is allocated later). *out is owned by the caller. */
MHSA_API mhsa_status mhsa_workspace_create(const mhsa_block *blk, int max_batch,
                                           mhsa_workspace **out);
/* The same for sequences of up to max_t tokens, 1 <= max_t <= max_seq_len
 * (else MHSA_ERR_INVALID_ARG): memory linear in max_t instead of
 * max_seq_len, for callers that size a workspace by the input they have
 * (the Python package does). Calls beyond it are refused with
 * MHSA_ERR_SHAPE: mhsa_forward(_ex) with T > max_t, and
 * mhsa_forward_cached(_ex) with t_new > max_t or a cache whose capacity
 * exceeds max_t. mhsa_workspace_create is this with max_t = max_seq_len;
 * the results are the same bits whichever made the workspace. */
MHSA_API mhsa_status mhsa_workspace_create_sized(const mhsa_block *blk,
                                                 int max_batch, int max_t,
                                                 mhsa_workspace **out);
MHSA_API void        mhsa_workspace_destroy(mhsa_workspace *ws);     /* NULL: no-op */
/* The memory the workspace holds, in bytes; 0 for NULL. */
MHSA_API size_t      mhsa_workspace_bytes(const mhsa_workspace *ws);

/* y = MultiHeadSelfAttention(x), x and y (B, T, D): the shorthand of
 * mhsa_forward_ex without key padding (seq_len = NULL; the same bits).
 * mask: optional additive mask (T, T) added to the scaled scores after the
 *       causal mask and the window; NULL for none. Only the causal mask,
 *       the window and -INFINITY entries block a key; a finite value,
 *       however negative, is added like any other. A blocked key is never
 *       read: NaN/inf in its K/V cannot reach the output; NaN/inf in
 *       anything a row does read propagates.
 * attn: optional output (B, H, T, T) of the per-head softmax weights. When
 *       NULL the (T, T) score matrix is never materialised.
 * A row whose every key is masked gets all-zero weights and a zero context
 * (never NaN), so that row of y equals b_out.
 * Records the forward in ws for mhsa_backward. Errors: blk, ws, x or y NULL,
 * B or T < 1, ws made for another block: MHSA_ERR_INVALID_ARG; T >
 * max_seq_len or B > the workspace's max_batch: MHSA_ERR_SHAPE. No
 * allocation; uses OpenMP threads (OMP_NUM_THREADS) for large enough work.
 * Thread-safe for concurrent calls with different workspaces. */
MHSA_API mhsa_status mhsa_forward(const mhsa_block *blk, mhsa_workspace *ws,
                                  const float *x, int B, int T,
                                  const float *mask, float *y, float *attn);

typedef struct mhsa_forward_args {
    const float *x;        /* (B, T, D) */
    int B, T;
    const float *mask;     /* (T, T) additive or NULL, as in mhsa_forward */
    const int *seq_len;    /* (B) or NULL: 1 <= seq_len[b] <= T */
    float *y;              /* (B, T, D) */
    float *attn;           /* (B, H, T, T) or NULL */
} mhsa_forward_args;

/* mhsa_forward with key padding: key positions j >= seq_len[b] of sequence
 * b are blocked for every query of b (PyTorch's key_padding_mask), on top
 * of causal, window and mask. Query rows at padded positions are still
 * computed over the keys they may see (a row that sees none gets a zero
 * context). seq_len == NULL is mhsa_forward exactly (same bits).
 * mhsa_backward works after it; the caller keeps seq_len alive and
 * unchanged until then, like x and mask. One sequence's results never
 * depend on what the other sequences hold. Errors as mhsa_forward, and
 * a NULL a, or seq_len[b] outside 1..T: MHSA_ERR_INVALID_ARG naming b and
 * the value. */
MHSA_API mhsa_status mhsa_forward_ex(const mhsa_block *blk, mhsa_workspace *ws,
                                     const mhsa_forward_args *a);

typedef struct mhsa_grads {   /* same shapes as the weights; made only by */
    float *w_qkv, *b_qkv, *w_out, *b_out;   /* mhsa_grads_create; the bias */
} mhsa_grads;                               /* pointers are NULL when bias == 0 */

/* Zeroed gradient buffers of the block's weight shapes, owned by the caller
 * (the pointers inside belong to the mhsa_grads; free with
 * mhsa_grads_destroy). Errors: NULL arguments: MHSA_ERR_INVALID_ARG; out
 * of memory: MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_grads_create(const mhsa_block *blk, mhsa_grads **out);
MHSA_API void        mhsa_grads_zero(mhsa_grads *g);       /* sets all to 0; NULL ok */
MHSA_API void        mhsa_grads_destroy(mhsa_grads *g);    /* NULL is a no-op */

/* Backward of the last mhsa_forward or mhsa_forward_ex made with this
 * workspace. dy (B, T, D) in; dx (B, T, D) out (may be NULL); gradients
 * are ADDED into g. The caller keeps the forward's x and mask (and
 * seq_len) alive and unchanged until then. It may be called more than
 * once for one forward (each call adds again). MHSA_ERR_STATE if the
 * workspace holds no forward, or the block's weights changed since it;
 * mhsa_forward_cached(_ex) on the same workspace discards the recorded
 * forward. Other errors: blk, ws, dy or g NULL, ws or g made for a block
 * of another shape: MHSA_ERR_INVALID_ARG. Deterministic: the same bits
 * whatever the thread count. */
MHSA_API mhsa_status mhsa_backward(const mhsa_block *blk, mhsa_workspace *ws,
                                   const float *dy, float *dx, mhsa_grads *g);

/* ---- KV cache (incremental decoding) ------------------------------------ */

typedef struct mhsa_kv_cache mhsa_kv_cache;

/* The shorthand of mhsa_kv_cache_create_ex with dtype MHSA_F32.
 * max_batch or capacity < 1: MHSA_ERR_INVALID_ARG; capacity > the block's
 * max_seq_len: MHSA_ERR_SHAPE; a non-causal block: MHSA_ERR_INVALID_ARG.
 * The cache holds the keys and values of max_batch sequences of up to
 * capacity positions, split by kv head: 2 * max_batch * capacity * Hkv * dh
 * values of its dtype (4 bytes for F32, 2 for F16 and BF16), allocated here
 * and owned by the caller, plus one length per sequence (mhsa_kv_cache_bytes
 * counts it all). One cache per sequence batch; not to be shared between
 * threads running at once. */
MHSA_API mhsa_status mhsa_kv_cache_create(const mhsa_block *blk, int max_batch,
                                          int capacity, mhsa_kv_cache **out);
MHSA_API void        mhsa_kv_cache_destroy(mhsa_kv_cache *c);        /* NULL: no-op */

typedef struct mhsa_kv_config {
    int max_batch;
    int capacity;
    mhsa_dtype dtype;      /* of the stored K and V */
} mhsa_kv_config;

/* K and V are rounded to dtype (IEEE binary16 or bfloat16, round to
 * nearest even; values beyond the F16 range become +-inf) when stored, and
 * attention is computed in fp32 from the stored values: the results equal
 * those of an fp32 cache whose K and V were first rounded so.
 * mhsa_kv_cache_bytes reflects the smaller storage. cfg NULL, an unknown
 * dtype: MHSA_ERR_INVALID_ARG; other errors as mhsa_kv_cache_create, which
 * is this call with MHSA_F32. */
MHSA_API mhsa_status mhsa_kv_cache_create_ex(const mhsa_block *blk,
                                             const mhsa_kv_config *cfg,
                                             mhsa_kv_cache **out);

/* Forgets every cached position of every sequence (and the batch size of
 * mhsa_forward_cached); the cache then behaves bit for bit like a fresh
 * one. NULL is a no-op. */
MHSA_API void        mhsa_kv_cache_reset(mhsa_kv_cache *c);
/* Positions cached so far: the longest sequence's length (under
 * mhsa_forward_cached alone every sequence of the batch has it; in ragged
 * batches ask mhsa_kv_cache_seq_len); 0 for NULL. */
MHSA_API int         mhsa_kv_cache_len(const mhsa_kv_cache *c);
/* Positions cached for sequence b (slot b); 0 for NULL or b out of range. */
MHSA_API int         mhsa_kv_cache_seq_len(const mhsa_kv_cache *c, int b);
/* Empties slot b only: it then behaves bit for bit like a fresh one (for
 * continuous batching); the other sequences keep their positions. b out of
 * range or c NULL: MHSA_ERR_INVALID_ARG. */
MHSA_API mhsa_status mhsa_kv_cache_reset_seq(mhsa_kv_cache *c, int b);
/* The memory the cache holds, in bytes; 0 for NULL. */
MHSA_API size_t      mhsa_kv_cache_bytes(const mhsa_kv_cache *c);

/* Appends the keys/values of x_new (B, t_new, D) after the cached ones and
 * attends causally over all cached plus new positions; y (B, t_new, D): the
 * shorthand of mhsa_forward_cached_ex with n_new = NULL (every sequence
 * appends t_new rows), with one rule more: every mhsa_forward_cached call
 * since the last mhsa_kv_cache_reset uses the same B.
 * Token by token it gives the same rows (to fp32 rounding) as one causal
 * mhsa_forward over the whole sequence. If len + t_new > capacity it returns
 * MHSA_ERR_SHAPE and the cache is unchanged. Other errors: a NULL pointer,
 * B or t_new < 1, ws or cache made for another block: MHSA_ERR_INVALID_ARG;
 * B > max_batch (workspace or cache), t_new > max_seq_len, or B unlike the
 * earlier calls since the last reset: MHSA_ERR_SHAPE. One token at a time
 * streams K and V once, split over the threads in fixed key chunks. */
MHSA_API mhsa_status mhsa_forward_cached(const mhsa_block *blk, mhsa_workspace *ws,
                                         mhsa_kv_cache *cache,
                                         const float *x_new, int B, int t_new, float *y);

typedef struct mhsa_cached_args {
    const float *x_new;    /* (B, t_new, D) */
    int B, t_new;
    const int *n_new;      /* (B) or NULL (= t_new for all):
                              0 <= n_new[b] <= t_new */
    float *y;              /* (B, t_new, D) */
} mhsa_cached_args;

/* Each sequence b of the cache has its own length, seq_len(b)
 * (mhsa_kv_cache_seq_len). Appends the first n_new[b] rows of x_new[b] to
 * sequence b at positions seq_len(b) ...; those rows of y are what one
 * causal forward over that sequence's whole history gives (to fp32
 * rounding); rows >= n_new[b] of y[b] are set to 0, and n_new[b] = 0
 * leaves sequence b untouched. Sequences >= B are untouched. B may differ
 * between calls (up to max_batch). If any sequence would exceed the
 * capacity, or t_new exceeds max_seq_len (the rows a workspace holds per
 * sequence): MHSA_ERR_SHAPE naming it, nothing changed. An n_new[b]
 * outside 0..t_new: MHSA_ERR_INVALID_ARG naming b and the value, nothing
 * changed. Other errors as mhsa_forward_cached. One sequence's results
 * never depend on what the other sequences of the batch hold. */
MHSA_API mhsa_status mhsa_forward_cached_ex(const mhsa_block *blk, mhsa_workspace *ws,
                                            mhsa_kv_cache *cache,
                                            const mhsa_cached_args *a);

/* ---- Weight files (safetensors) ----------------------------------------- */

/* Reads the block's weights after `prefix` ("" or e.g. "attn.") from a
 * .safetensors file, named by any one complete set of (tried in this
 * order, the order of mhsa_names):
 *   PyTorch       in_proj_weight ((H + 2*Hkv)*dh, D), in_proj_bias,
 *                 out_proj.weight (D, D), out_proj.bias (D)
 *   Hugging Face  q_proj (D, D), k_proj and v_proj (Hkv*dh, D), o_proj
 *                 (D, D), each .weight and .bias
 *   GPT           c_q, c_k, c_v, c_proj, the same shapes and suffixes.
 * A set is complete when all its weights, and its biases when bias == 1,
 * are present by name (biases are ignored when bias == 0); the first
 * complete set is loaded and every other tensor ignored. dtypes F32, F16
 * and BF16 are converted to fp32. The whole file is validated as the
 * format defines it before any tensor is read. A tensor of the chosen set
 * with another shape, or a dtype other than those three: MHSA_ERR_FORMAT
 * naming it (expected and found shape); no complete set: MHSA_ERR_FORMAT
 * naming the first missing PyTorch tensor, then what each partly present
 * set lacks; a path that cannot be opened or is a directory: MHSA_ERR_IO;
 * malformed bytes: MHSA_ERR_FORMAT; built without safetensors support:
 * MHSA_ERR_UNSUPPORTED. On failure the block's weights are unchanged. */
MHSA_API mhsa_status mhsa_block_load_safetensors(mhsa_block *blk, const char *path,
                                                 const char *prefix);
/* Writes the block's tensors (F32; the weights of a block with a 16-bit
 * weight_dtype as F16 / BF16) under PyTorch's names (the biases only when
 * bias == 1), replacing path only once the new file is complete: the
 * shorthand of mhsa_block_save_safetensors_ex with MHSA_NAMES_TORCH.
 * Errors: NULL arguments: MHSA_ERR_INVALID_ARG; cannot write:
 * MHSA_ERR_IO; built without safetensors support: MHSA_ERR_UNSUPPORTED. */
MHSA_API mhsa_status mhsa_block_save_safetensors(const mhsa_block *blk, const char *path,
                                                 const char *prefix);

/* The sets of tensor names a block's weights go by in a file; which one
 * mhsa_block_load_safetensors accepts is described there. */
typedef enum mhsa_names {
    MHSA_NAMES_TORCH = 0, MHSA_NAMES_HF, MHSA_NAMES_C
} mhsa_names;

/* mhsa_block_save_safetensors with the chosen set of names (with their
 * shapes, as mhsa_block_load_safetensors lists them); an unknown names
 * value: MHSA_ERR_INVALID_ARG. */
MHSA_API mhsa_status mhsa_block_save_safetensors_ex(const mhsa_block *blk,
                                                    const char *path,
                                                    const char *prefix,
                                                    mhsa_names names);

#ifdef __cplusplus
}
#endif

#endif /* MHSA_H */
