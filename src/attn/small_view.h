// small_view.h — a small view's forward in one fused kernel (small_view.c).
#ifndef MHSA_ATTN_SMALL_VIEW_H
#define MHSA_ATTN_SMALL_VIEW_H

#include "tiles.h"

// The most query rows a view sent to the fused kernel may have (the
// kernels decline more anyway; this sizes the per-row statistics).
enum { MHSA_SMALL_VIEW_ROWS = 16 };
// The most keys and head columns every table's fused kernel takes (the
// AVX-512 and AVX2 ones: 16 and 32): forward.c reads q, k, v in place
// only for views within them.
enum { MHSA_SMALL_VIEW_KEYS = 16, MHSA_SMALL_VIEW_DH = 32 };

// Runs the forward of the block a (mhsa__head_forward's outputs: o, and
// lse / lsum when asked, with the same bits) through k->attn_small and
// returns 1, or returns 0 when the table has no such kernel or it
// declines the view; o may then have been written, and the caller runs
// the tiled path, which writes everything again.
int mhsa__head_forward_small(const mhsa_kernels *k, const head_args *a);

// The forward of nh (2..4) consecutive heads h0 .. of one sequence read
// in place (ldqkv) with lse and lsum, at once through k->attn_small_heads:
// a is head h0's block (mhsa__view_block_set), kh[hh] and vh[hh] head h0
// + hh's K and V rows; the other heads' q and o lie at a's + hh * dh, their
// lse and lsum at a's + hh * tq (view.c's layout). Returns 1 having written
// every head's outputs with mhsa__head_forward_small's bits, or 0 (maybe
// having written some) when the table has no such kernel or it declines,
// and the caller runs the heads one by one.
int mhsa__heads_forward_small(const mhsa_kernels *k, const head_args *a,
                              size_t nh, const float *const *kh,
                              const float *const *vh);

#endif
