// kv_layers.h — one sequence's key/value caches, one per layer, as a
// decoder keeps them (the Llama runner's cache, the GPT's cached
// generation): made together, reset together, destroyed together.
#ifndef MHSA_NN_KV_LAYERS_H
#define MHSA_NN_KV_LAYERS_H

#include <stddef.h>

#include "mhsa.h"

// *out = (L) caches, kv[l] of config kc for block blk(ctx, l). On failure
// nothing is left allocated, *out is unchanged and the status (the
// cache's own message, or MHSA_ERR_NO_MEMORY naming fn) is returned.
mhsa_status mhsa__kv_layers_create(const char *fn, size_t L,
                                   const mhsa_kv_config *kc,
                                   const mhsa_block *(*blk)(const void *ctx,
                                                            size_t l),
                                   const void *ctx, mhsa_kv_cache ***out);
// Every layer's cache emptied (mhsa_kv_cache_reset).
void mhsa__kv_layers_reset(mhsa_kv_cache **kv, size_t L);
// Every cache and the array; NULL is a no-op.
void mhsa__kv_layers_destroy(mhsa_kv_cache **kv, size_t L);

#endif
