/* mhsa — multi-head self-attention for CPUs.
 *
 * The public C11 API. Everything here follows the contract in the project's
 * API document: names, argument order and meanings are fixed; new functions,
 * enum values and struct fields are only ever added at the end.
 *
 * Conventions
 * - Every tensor is caller-owned, row-major, contiguous fp32. Shapes are
 *   written outermost first: (B, T, D) means x[(b*T + t)*D + d].
 * - B batch, T sequence length, D = d_model, H = n_heads, dh = D / H.
 * - Linear layers follow PyTorch: y = x @ W^T + b, W stored (out, in).
 * - Weights use torch.nn.MultiheadAttention's layout: w_qkv = in_proj_weight
 *   (3D, D) = rows [Wq; Wk; Wv], b_qkv = in_proj_bias (3D),
 *   w_out = out_proj.weight (D, D), b_out = out_proj.bias (D).
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
const char *mhsa_status_str(mhsa_status s);
/* The calling thread's last error message, one line; "" when none. Like
 * errno, a successful call does not clear it. */
const char *mhsa_last_error(void);
/* The library version, "MAJOR.MINOR.PATCH". */
const char *mhsa_version(void);

/* ---- Kernel dispatch --------------------------------------------------- */

typedef enum mhsa_isa {
    MHSA_ISA_AUTO = 0,  /* best the CPU supports (the default) */
    MHSA_ISA_SCALAR,
    MHSA_ISA_AVX2,      /* AVX2 + FMA */
    MHSA_ISA_NEON
} mhsa_isa;

/* Process-wide choice of kernels. MHSA_ERR_UNSUPPORTED (active ISA left
 * unchanged) if this build or CPU lacks it; MHSA_ERR_INVALID_ARG for a value
 * outside the enum. Call it before other threads use the library.
 * The environment variable MHSA_ISA=scalar|avx2|neon|auto sets the choice at
 * first use; an unknown or unavailable value falls back to auto. */
mhsa_status mhsa_select_isa(mhsa_isa isa);
/* The ISA in use; never MHSA_ISA_AUTO. */
mhsa_isa    mhsa_active_isa(void);
/* "auto", "scalar", "avx2", "neon"; "unknown" for a value outside the enum. */
const char *mhsa_isa_name(mhsa_isa isa);

/* ---- The attention block ----------------------------------------------- */

typedef struct mhsa_config {
    int d_model;      /* D > 0 */
    int n_heads;      /* H > 0, D % H == 0 */
    int max_seq_len;  /* largest T (and largest KV-cache length) */
    int causal;       /* 1: position t attends to positions <= t only */
    int bias;         /* 1: b_qkv and b_out exist */
} mhsa_config;

typedef struct mhsa_block mhsa_block;

/* Creates a block with all weights zero. Errors: cfg or out NULL, a
 * non-positive size, causal/bias not 0 or 1: MHSA_ERR_INVALID_ARG;
 * D % H != 0: MHSA_ERR_SHAPE; sizes that overflow: MHSA_ERR_NO_MEMORY. */
/* *out receives a new block owned by the caller (free it with
 * mhsa_block_destroy); *out is untouched on failure. The configuration is
 * copied. Memory: the weights (4*D*D + 4*D floats) and one packed copy. */
mhsa_status mhsa_block_create(const mhsa_config *cfg, mhsa_block **out);
/* Frees the block. Workspaces, caches and gradients made for it must not be
 * used with it afterwards (destroy them too). NULL is a no-op. */
void        mhsa_block_destroy(mhsa_block *blk);
/* Copies the weights in (shapes above; the caller keeps ownership) and packs
 * them for the GEMM once. b_qkv and b_out are required when bias == 1 and
 * ignored (may be NULL) when bias == 0. Errors: blk or a required pointer
 * NULL: MHSA_ERR_INVALID_ARG. Not thread-safe against concurrent use of the
 * same block; a workspace's recorded forward no longer matches afterwards
 * (mhsa_backward then returns MHSA_ERR_STATE). */
mhsa_status mhsa_block_set_weights(mhsa_block *blk,
                                   const float *w_qkv, const float *b_qkv,
                                   const float *w_out, const float *b_out);
/* Copies the weights out into caller buffers of the shapes above; the same
 * pointer rules as mhsa_block_set_weights. Safe to call concurrently with
 * forwards on the same block. */
mhsa_status mhsa_block_get_weights(const mhsa_block *blk,
                                   float *w_qkv, float *b_qkv,
                                   float *w_out, float *b_out);
/* w_qkv (as one (3D, D) matrix) and w_out Xavier-uniform, biases zero, as
 * torch.nn.MultiheadAttention initialises; the same bits from the same seed
 * on every platform. blk NULL: MHSA_ERR_INVALID_ARG. */
mhsa_status mhsa_block_init_random(mhsa_block *blk, uint64_t seed);

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
mhsa_status mhsa_workspace_create(const mhsa_block *blk, int max_batch,
                                  mhsa_workspace **out);
void        mhsa_workspace_destroy(mhsa_workspace *ws);     /* NULL: no-op */
/* The memory the workspace holds, in bytes; 0 for NULL. */
size_t      mhsa_workspace_bytes(const mhsa_workspace *ws);

/* y = MultiHeadSelfAttention(x), x and y (B, T, D).
 * mask: optional additive mask (T, T) added to the scaled scores after the
 *       causal mask; NULL for none. Only the causal mask and -INFINITY
 *       entries block a key; a finite value, however negative, is added like
 *       any other. A blocked key is never read: NaN/inf in its K/V cannot
 *       reach the output; NaN/inf in anything a row does read propagates.
 * attn: optional output (B, H, T, T) of the per-head softmax weights. When
 *       NULL the (T, T) score matrix is never materialised.
 * A row whose every key is masked gets all-zero weights and a zero context
 * (never NaN), so that row of y equals b_out.
 * Records the forward in ws for mhsa_backward. Errors: blk, ws, x or y NULL,
 * B or T < 1, ws made for another block: MHSA_ERR_INVALID_ARG; T >
 * max_seq_len or B > the workspace's max_batch: MHSA_ERR_SHAPE. No
 * allocation; uses OpenMP threads (OMP_NUM_THREADS) for large enough work.
 * Thread-safe for concurrent calls with different workspaces. */
mhsa_status mhsa_forward(const mhsa_block *blk, mhsa_workspace *ws,
                         const float *x, int B, int T,
                         const float *mask, float *y, float *attn);

typedef struct mhsa_grads {   /* same shapes as the weights; made only by */
    float *w_qkv, *b_qkv, *w_out, *b_out;   /* mhsa_grads_create; the bias */
} mhsa_grads;                               /* pointers are NULL when bias == 0 */

/* Zeroed gradient buffers of the block's weight shapes, owned by the caller
 * (the pointers inside belong to the mhsa_grads; free with
 * mhsa_grads_destroy). Errors: NULL arguments: MHSA_ERR_INVALID_ARG; out
 * of memory: MHSA_ERR_NO_MEMORY. */
mhsa_status mhsa_grads_create(const mhsa_block *blk, mhsa_grads **out);
void        mhsa_grads_zero(mhsa_grads *g);       /* sets all to 0; NULL ok */
void        mhsa_grads_destroy(mhsa_grads *g);    /* NULL is a no-op */

/* Backward of the last mhsa_forward made with this workspace.
 * dy (B, T, D) in; dx (B, T, D) out (may be NULL); gradients are ADDED into g.
 * The caller keeps the forward's x and mask alive and unchanged until then.
 * It may be called more than once for one forward (each call adds again).
 * MHSA_ERR_STATE if the workspace holds no forward, or the block's weights
 * changed since it; mhsa_forward_cached on the same workspace discards the
 * recorded forward. Other errors: blk, ws, dy or g NULL, ws or g made for a
 * block of another shape: MHSA_ERR_INVALID_ARG. Deterministic: the same bits
 * whatever the thread count. */
mhsa_status mhsa_backward(const mhsa_block *blk, mhsa_workspace *ws,
                          const float *dy, float *dx, mhsa_grads *g);

/* ---- KV cache (incremental decoding) ------------------------------------ */

typedef struct mhsa_kv_cache mhsa_kv_cache;

/* max_batch or capacity < 1: MHSA_ERR_INVALID_ARG; capacity > the block's
 * max_seq_len: MHSA_ERR_SHAPE; a non-causal block: MHSA_ERR_INVALID_ARG.
 * Every mhsa_forward_cached call since the last reset uses the same B (else
 * MHSA_ERR_SHAPE). */
/* The cache holds 2 * max_batch * capacity * D floats (keys and values,
 * split by head), allocated here and owned by the caller. One cache per
 * sequence batch; not to be shared between threads running at once. */
mhsa_status mhsa_kv_cache_create(const mhsa_block *blk, int max_batch,
                                 int capacity, mhsa_kv_cache **out);
void        mhsa_kv_cache_destroy(mhsa_kv_cache *c);        /* NULL: no-op */
/* Forgets every cached position (and the batch size); the cache then
 * behaves bit for bit like a fresh one. NULL is a no-op. */
void        mhsa_kv_cache_reset(mhsa_kv_cache *c);
/* Positions cached so far; 0 for NULL. */
int         mhsa_kv_cache_len(const mhsa_kv_cache *c);
/* The memory the cache holds, in bytes; 0 for NULL. */
size_t      mhsa_kv_cache_bytes(const mhsa_kv_cache *c);

/* Appends the keys/values of x_new (B, t_new, D) after the cached ones and
 * attends causally over all cached plus new positions; y (B, t_new, D).
 * Token by token it gives the same rows (to fp32 rounding) as one causal
 * mhsa_forward over the whole sequence. If len + t_new > capacity it returns
 * MHSA_ERR_SHAPE and the cache is unchanged. Other errors: a NULL pointer,
 * B or t_new < 1, ws or cache made for another block: MHSA_ERR_INVALID_ARG;
 * B > max_batch (workspace or cache), or B unlike the
 * earlier calls since the last reset: MHSA_ERR_SHAPE. One token at a time
 * streams K and V once, split over the threads in fixed key chunks. */
mhsa_status mhsa_forward_cached(const mhsa_block *blk, mhsa_workspace *ws,
                                mhsa_kv_cache *cache,
                                const float *x_new, int B, int t_new, float *y);

/* ---- Weight files (safetensors) ----------------------------------------- */

/* Reads in_proj_weight (3D, D), in_proj_bias (3D), out_proj.weight (D, D),
 * out_proj.bias (D) after `prefix` from a .safetensors file; dtypes F32, F16,
 * BF16. Missing tensor or wrong shape: MHSA_ERR_FORMAT naming it; a path that
 * cannot be opened: MHSA_ERR_IO; malformed bytes: MHSA_ERR_FORMAT. On failure
 * the block's weights are unchanged. */
mhsa_status mhsa_block_load_safetensors(mhsa_block *blk, const char *path,
                                        const char *prefix);
/* Writes the block's tensors (F32) under the same names (the biases only
 * when bias == 1), replacing path only once the new file is complete.
 * Errors: NULL arguments: MHSA_ERR_INVALID_ARG; cannot write:
 * MHSA_ERR_IO; built without safetensors support: MHSA_ERR_UNSUPPORTED. */
mhsa_status mhsa_block_save_safetensors(const mhsa_block *blk, const char *path,
                                        const char *prefix);

/* ---- Additions beyond the contract -------------------------------------- */

/* The configuration the block was created with; NULL for NULL. */
const mhsa_config *mhsa_block_config(const mhsa_block *blk);

#ifdef __cplusplus
}
#endif

#endif /* MHSA_H */
