// cached_qkv.h — attention through a KV cache for a model that computes
// its projections itself (src/models/llama with the weights kept as the
// GGUF file stores them, quantized blocks the block cannot hold): a block
// without weights, and the cached attention of rows already projected.
// Internal: not exported, not in include/mhsa.h.
#ifndef MHSA_API_CACHED_QKV_H
#define MHSA_API_CACHED_QKV_H

#include "mhsa.h"

// A block of cfg (checked as mhsa_block_create checks it; bias must be 0)
// that holds no weights: only its heads, its RoPE tables and its config.
// Workspaces, KV caches and mhsa__workspace_rebind take it as any block;
// the public calls that read or write weights (set/get weights, random
// init, safetensors load and save, forward, forward_cached, backward)
// refuse it with MHSA_ERR_INVALID_ARG, saying so. mhsa_block_destroy
// frees it; mhsa_block_weight_bytes is 0.
mhsa_status mhsa__block_create_shell(const mhsa_config *cfg,
                                     mhsa_block **out);

// mhsa_forward_cached's work between its two projections for n new rows
// of one sequence (B = 1): qkv (n, nqkv) the projected rows [q (D) | k
// (Hkv*dh) | v (Hkv*dh)], split into heads with RoPE at positions len ..
// len + n - 1, k and v straight into the cache (rounded to its dtype);
// each row attends over the cache; ctx (n, D) the merged heads, before
// any output projection; the cache's length advanced by n. The same
// pieces as mhsa_forward_cached (cached.c, and for n = 1 the one-region
// step of cached_step.c): the bits that call computes from the same qkv.
// The checks and errors are mhsa_forward_cached's with B = 1 (and
// MHSA_ERR_INVALID_ARG for NULL qkv or ctx); any block, with weights or
// without.
mhsa_status mhsa__forward_cached_qkv(const mhsa_block *blk,
                                     mhsa_workspace *ws,
                                     mhsa_kv_cache *cache, const float *qkv,
                                     int n, float *ctx);

#endif
