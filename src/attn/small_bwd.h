// small_bwd.h — a small block's backward in the table's unpacked products
// (small_bwd.c).
#ifndef MHSA_ATTN_SMALL_BWD_H
#define MHSA_ATTN_SMALL_BWD_H

#include "tiles.h"

// Runs the backward of the block a over its key tile [j0, kend) through
// k->small_bwd_scores / small_bwd_grads and returns 1, when the table has
// them and the block is one tile they can take (see small_bwd.c); returns
// 0, having written nothing, otherwise, and the caller runs the tiled
// path. jend: one past the last key whose tile this call visits (the
// head split's key1). safe: the block's K, V, Q and dO are all finite.
// bc: mhsa__attn_bc(k). tiles: the thread's tile memory, whose score, dP
// and delta rows (mhsa__attn_bwd_rows) the three calls use; the fused
// kernel needs none of it. The bits of mhsa__head_backward's tiled path.
int mhsa__head_backward_small(const mhsa_kernels *k, const head_args *a,
                              int safe, size_t j0, size_t jend, size_t kend,
                              size_t bc, float *tiles);

// The same for the blocks a[0 .. nh) (2 <= nh <= 4) of one sequence's
// heads at once, through k->attn_small_heads_bwd, when the table has it
// and the kernel takes them (kernels.h: the heads side by side in dO, O
// and the gradients); returns 0 having written nothing otherwise. Every
// block's K, V, Q and dO must be finite (safe above, checked by the
// caller). The tile [j0, jend, kend) and bc as above, the same for every
// head; dq must be zeroed already where it is computed.
int mhsa__heads_backward_small(const mhsa_kernels *k, const head_args *a,
                               size_t nh, size_t j0, size_t jend,
                               size_t kend, size_t bc);

#endif
