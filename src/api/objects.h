// objects.h — the layout of the API's objects (block, workspace, KV cache,
// gradients) and the internal entry points on them. Only the API floor
// (src/api) and the drivers it hands its objects to include this; code
// above the API (the trainer, the models, file formats) sees the objects
// through include/mhsa.h alone.
#ifndef MHSA_API_OBJECTS_H
#define MHSA_API_OBJECTS_H

#include <stddef.h>

#include <stdint.h>

#include "api/workspace_rebind.h"
#include "attn/scratch.h"
#include "attn/split.h"
#include "core/alloc.h"
#include "core/status.h"
#include "gemm/gemm.h"
#include "kernels/kernels.h"
#include "mhsa.h"

// ---- the block ------------------------------------------------------------
struct mhsa_block {
    mhsa_config cfg;
    size_t D, H, dh;
    size_t Hkv;             // kv heads (cfg.n_kv_heads, or H)
    size_t group;           // H / Hkv query heads share one kv head
    size_t nqkv;            // rows of w_qkv: (H + 2*Hkv) * dh
    size_t rope_half;       // rope_dim / 2 rotated pairs per head (0: none)
    uint64_t id;            // unique per block ever created: ownership checks
    uint64_t version;       // bumped by every weight change
    // 1: a block that holds no weights (mhsa__block_create_shell, for a
    // model that projects Q, K, V and the output itself): w_qkv, w_out,
    // the biases and the packed copies are NULL, and the public calls
    // that read or write weights refuse it (mhsa__check_weights).
    int shell;
    // The weights as stored: elements of wdt (cfg.weight_dtype). 16-bit
    // weights are read as they are stored (the GEMM widens them while
    // packing each cache-sized block, the one-row products in registers).
    mhsa_dtype wdt;
    // cfg.compute_dtype: every matrix product's operands rounded to bf16
    // (MHSA_BF16) or fp32; passed to the GEMM and the attention tiles.
    mhsa_dtype cdt;
    void *w_qkv;            // (nqkv, D) = [Wq (D); Wk (Hkv*dh); Wv]
    float *b_qkv;           // (nqkv) or NULL
    void *w_out;            // (D, D)
    float *b_out;           // (D) or NULL
    // fp32 weights packed once for the GEMM as op(B) = W^T, for the table
    // that was active at the last weight change; another table packs on
    // the fly. With compute dtype BF16 the packed panels are rounded to
    // bf16 (what the GEMM's packers would make of them on the fly). NULL
    // for 16-bit weights: a whole fp32 copy would undo the halving
    // (they are packed on the fly, one KC block at a time).
    const mhsa_kernels *packed_for;
    float *w_qkv_packed;    // K = D, N = nqkv
    float *w_out_packed;    // K = D, N = D
    // Rotary embedding: cos and sin of p * theta^(-2i/R) for positions p <
    // max_seq_len and pairs i < R/2, computed in double, stored as float.
    float *rope_cos, *rope_sin;   // (max_seq_len, rope_half) or NULL
};

// ---- the workspace ---------------------------------------------------------
// Carved once into named views (sizes for max_batch x max_seq_len tokens);
// nothing is allocated after creation.
struct mhsa_workspace {
    const mhsa_block *blk;
    uint64_t blk_id;
    size_t max_batch, max_t;
    int max_threads;          // per-thread views exist for this many threads
    size_t bytes;
    float *qkv;               // (B*T, nqkv) projection; backward: dqkv
    size_t qkv_floats;
    float *q;                 // (B, H, T, dh), scaled by 1/sqrt(dh)
    float *k, *v;             // (B, Hkv, T, dh) each
    float *ctx;               // (B, T, D) merged attention output
    float *dctx;              // (B, T, D) backward only
    float *lse;               // (B, H, T) log-sum-exp per query row
    float *row;               // dh floats: one rotated / converted row
    attn_scratch attn;        // attention's scratch: tiles per thread,
                              // decode partials, task tables, views
    mhsa_gemm_scratch gemm;   // driver scratch (packed A per thread, B)
    // The recorded forward for mhsa_backward.
    int has_forward;
    int lse_pending;          // lse holds row maxima, dctx row sums
    int split_pending;        // q, k, v not split yet (qkv holds them)
    size_t fwd_b, fwd_t;
    const float *fwd_x, *fwd_mask;
    const int *fwd_seq_len;
    uint64_t fwd_version;     // blk->version at the forward
    const mhsa_kernels *fwd_kern;
};

// ---- gradients ------------------------------------------------------------
typedef struct mhsa_grads_impl {
    mhsa_grads pub;           // first member: mhsa_grads * casts to it
    size_t D, nqkv;           // w_qkv is (nqkv, D)
    int bias;
} mhsa_grads_impl;

// ---- KV cache -------------------------------------------------------------
struct mhsa_kv_cache {
    const mhsa_block *blk;
    uint64_t blk_id;
    size_t max_batch, capacity;
    size_t *len;              // (max_batch) cached positions per sequence
    size_t batch;             // B of mhsa_forward_cached calls since the
                              // last reset; 0 = not yet set
    mhsa_dtype dtype;         // of the stored K and V
    void *k, *v;              // (max_batch, Hkv, capacity, dh) each
    size_t bytes;
};


// The block's heads and rotation tables for the split (attn/split.h).
static inline head_layout mhsa__head_layout(const mhsa_block *blk)
{
    head_layout l = { blk->D, blk->H, blk->Hkv, blk->dh, blk->nqkv,
                      blk->rope_half, blk->cfg.rope_interleaved,
                      blk->rope_cos, blk->rope_sin };
    return l;
}

// Packs the weights for the active kernel table (after any weight change).
void mhsa__block_repack(mhsa_block *b);

// Checks shared by the public entry points; each sets last_error naming the
// function and argument.
// MHSA_ERR_INVALID_ARG when blk is a block without weights (blk->shell):
// for the calls that read or write them. blk must not be NULL.
mhsa_status mhsa__check_weights(const char *fn, const mhsa_block *blk);
mhsa_status mhsa__check_ws(const char *fn, const mhsa_block *blk,
                           const mhsa_workspace *ws);
// A call over B sequences of t rows each (t_name: the argument's name in
// the messages): both >= 1, B within the workspace's max_batch, t within
// the block's max_seq_len and the workspace's max_t, checked in that order.
mhsa_status mhsa__check_rows(const char *fn, const mhsa_block *blk,
                             const mhsa_workspace *ws, int B,
                             const char *t_name, int t);

#endif
