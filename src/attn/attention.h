// attention.h — one query block of one head: forward, attention weights,
// backward. Called by forward.c / backward.c inside their OpenMP loops; each
// call is single-threaded and uses only the tile memory it is given.
#ifndef MHSA_ATTENTION_H
#define MHSA_ATTENTION_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "tiles.h"

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
#endif
