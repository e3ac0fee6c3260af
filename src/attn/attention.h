// attention.h — one query block of one head: forward, attention weights,
// backward. Called by forward.c / backward.c inside their OpenMP loops; each
// call is single-threaded and uses only the tile memory it is given.
#ifndef MHSA_ATTENTION_H
#define MHSA_ATTENTION_H

#include <stddef.h>

#include "kernels/kernels.h"

// One query block of rows [r0, r0 + tq) of one (b, h) head against keys
// [0, tk). Pointers are already offset to the head (and q, o, lse, dq, do_,
// attn to row r0), k and v to the head's kv head (grouped-query attention).
// Strides in elements. Which keys a row sees: the rules of mhsa_mask_view
// (causal, window, klen, mask) with q0 = q_pos; tiles no row sees are
// skipped.
typedef struct head_args {
    size_t tq, tk, dh;
    size_t q_pos;             // absolute position of query row 0
    int causal;
    size_t window;            // 0, or a sliding window of W keys
    size_t klen;              // 0, or keys >= klen are padding (blocked)
    const float *mask;        // additive (tq, ldmask) at (r0, key 0), or NULL
    size_t ldmask;
    float scale;              // 1/sqrt(dh), already folded into q
    const float *q;           // (tq, dh), row stride dh, pre-scaled
    // 0, or q, k and v are read in place in the QKV projection's rows,
    // ldqkv apart, and q is not scaled yet (attn_job.ldqkv): only the
    // fused small view (small_view.c) takes such a block.
    size_t ldqkv;
    // (tk, dh), row stride dh: fp32 (k, v), or in the KV cache's 16-bit
    // type (k16, v16, forward only), converted tile by tile.
    const float *k, *v;
    const void *k16, *v16;
    mhsa_dtype kv_dtype;
    float *o;  size_t ldo;    // (tq, dh) context out (merged layout row)
    float *lse;               // (tq) log-sum-exp out / in (backward)
    // forward, or NULL: lse gets each row's max and lsum its sum instead,
    // log-sum-exp = lse + log(lsum) (attn_job.lsum)
    float *lsum;
    float *attn; size_t ldattn;  // (tq, tk) weights out, or NULL
    // forward only: the head's K^T and V tiles packed once by
    // mhsa__head_pack_kv for all its query blocks, or NULL (packed per
    // block into the tile memory)
    const float *kpack, *vpack;
    // with them: per key tile, the first key (from the tile's start) whose
    // V row holds a non-finite value, or more than the tile's keys if none,
    // and the same for K rows
    const float *vbad, *kbad;
    // backward only
    const float *dout; size_t lddo;  // (tq, dh) dL/dO
    float *dq, *dk, *dv; size_t ldg; // rows of dqkv: dq (tq), dk/dv (tk)
    // backward only, to split one head over threads (all 0: everything):
    // leave dq or dk/dv alone, and only visit the key tiles that start in
    // [key0, key1) (key1 == 0: no upper bound; key0 a multiple of bc).
    int skip_dq, skip_dkv;
    size_t key0, key1;
    // backward only: dq's rows are +0 already (a one-thread backward
    // zeroes all of dqkv at once), so the block does not zero them.
    int dq_zeroed;
    // The whole call's q, k, v (and in the backward dout) were checked
    // finite at once (one thread, fp32 K/V of this call only), so the
    // block does not check its own rows.
    int inputs_finite;
    // mhsa_config.compute_dtype: MHSA_BF16 rounds every tile product's
    // packed operands (Q, K, V, P, dO, dS) to bf16 (gemm.h's tile
    // helpers); scores, softmax statistics and outputs stay fp32.
    mhsa_dtype compute;
} head_args;

// Keys [0, result) of the tile at key j0 (n keys) that some row of
// [0, row_end) can see: all n without the causal mask, else up to the last
// of those rows' positions. (Padding is cut by key_end, the window's lower
// edge left to the softmax.) Inline here because the tiled backward
// (attention.c) and the small tile's (small_bwd.c) must agree on it.
static inline size_t mhsa__attn_panel_keys(const head_args *a, size_t j0,
                                           size_t n, size_t row_end)
{
    if (!a->causal)
        return n;
    size_t last = a->q_pos + row_end;   // one past the last visible key
    if (last <= j0)
        return 0;
    return last - j0 < n ? last - j0 : n;
}

// Query/key block sizes for a kernel table (multiples of mr / nr).
size_t mhsa__attn_br(const mhsa_kernels *k);
size_t mhsa__attn_bc(const mhsa_kernels *k);
// Tile floats one thread needs for heads of size dh.
size_t mhsa__attn_tile_floats(const mhsa_kernels *k, size_t dh);
// The backward's score, dP and delta rows (bc wide, bc wide, tq) in a
// thread's tile memory: the views the tiled path carves, for the small
// backward's three calls (small_bwd.c), which carve only when they run.
void mhsa__attn_bwd_rows(const mhsa_kernels *k, size_t dh, float *tiles,
                         float **s, float **dp, float **delta);

// Floats of one head's packed K^T and V for tk keys (mhsa__head_pack_kv).
size_t mhsa__head_kpack_floats(const mhsa_kernels *k, size_t tk, size_t dh);
size_t mhsa__head_vpack_floats(const mhsa_kernels *k, size_t tk, size_t dh);
// Packs key tile `tile` (keys tile*bc ...) of one head's k and v (tk rows of
// dh, stored as dt; 16-bit rows are converted through `tiles`, the
// thread's tile memory) into kpack / vpack, where mhsa__head_forward looks
// for it, rounded to bf16 with cdt MHSA_BF16. The same bits as the
// per-block packing, so results do not
// change. Sets *vbad and *kbad to the tile's first key whose V (K) row is
// not all finite (the tile's key count if none), for head_args.
void mhsa__head_pack_kv(const mhsa_kernels *k, size_t tk, size_t dh,
                        size_t tile, const void *kd, const void *vd,
                        mhsa_dtype dt, mhsa_dtype cdt, float *kpack,
                        float *vpack, float *tiles, float *vbad, float *kbad);

// o = softmax(q k^T + mask) v for the block, streamed over key tiles with a
// running max and sum (online softmax); lse saved for backward. Keys after
// the block's last row are skipped under the causal mask.
void mhsa__head_forward(const mhsa_kernels *k, const head_args *a,
                        float *tiles);
// attn = the block's normalised weights (tq, tk), from scores recomputed
// against every key; blocked keys get exact zeros.
void mhsa__head_weights(const mhsa_kernels *k, const head_args *a,
                        float *tiles);
// Backward of mhsa__head_forward for the block: dq (scaled by a->scale) is
// written, dk and dv (for keys [0, tk)) are accumulated. p is recomputed
// tile by tile from the saved lse (FlashAttention-2).
void mhsa__head_backward(const mhsa_kernels *k, const head_args *a,
                         float *tiles);
// mhsa__head_backward of the blocks a[0 .. nh) (nh <= 4): one sequence's
// heads, consecutive, over the same rows. At once where the table's fused
// kernel for several heads takes them (small_bwd.h), else one by one; the
// same bits either way.
void mhsa__heads_backward(const mhsa_kernels *k, const head_args *a,
                          size_t nh, float *tiles);
// delta[r] = rowsum(dO * O) over the block's rows: the softmax gradient's
// term, each row's products summed in order from +0 (plain C, one rounding
// per product and per sum; the fused small kernels give the same per lane).
void mhsa__attn_deltas(const head_args *a, float *delta);

#endif
