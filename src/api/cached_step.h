// cached_step.h — one token of one sequence through a block and its KV
// cache in one parallel region (cached_step.c).
#ifndef MHSA_API_CACHED_STEP_H
#define MHSA_API_CACHED_STEP_H

#include "objects.h"

// mhsa_forward_cached's work for B = 1 and one new row at position
// cache->len[0] (the arguments already checked, the library's fp state
// entered): with x, the row projected into qkv (nqkv); without (NULL),
// qkv holds the projected row; then its attention into ctx (D) and, with
// y, the output projection y (D) of ctx; the row appended to the cache.
// Returns 0, touching nothing, when the step is not one it serves
// (compute dtype BF16, or a row the one-row decode path does not take);
// the caller then runs the general pipeline, which gives the same bits.
int mhsa__cached_step(const mhsa_kernels *k, const mhsa_block *blk,
                      mhsa_workspace *ws, mhsa_kv_cache *cache,
                      const float *x, float *qkv, float *ctx, float *y);

#endif
