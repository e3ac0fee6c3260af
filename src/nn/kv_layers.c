// kv_layers.c — one sequence's per-layer KV caches (kv_layers.h).
#include "nn/kv_layers.h"

#include <string.h>

#include "core/alloc.h"
#include "core/status.h"

mhsa_status mhsa__kv_layers_create(const char *fn, size_t L,
                                   const mhsa_kv_config *kc,
                                   const mhsa_block *(*blk)(const void *ctx,
                                                            size_t l),
                                   const void *ctx, mhsa_kv_cache ***out)
{
    mhsa_kv_cache **kv = mhsa__alloc(L * sizeof *kv);
    if (!kv)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: no memory", fn);
    memset(kv, 0, L * sizeof *kv);
    for (size_t l = 0; l < L; l++) {
        mhsa_status st = mhsa_kv_cache_create_ex(blk(ctx, l), kc, &kv[l]);
        if (st != MHSA_OK) {
            mhsa__kv_layers_destroy(kv, L);
            return st;
        }
    }
    *out = kv;
    return MHSA_OK;
}

void mhsa__kv_layers_reset(mhsa_kv_cache **kv, size_t L)
{
    for (size_t l = 0; l < L; l++)
        mhsa_kv_cache_reset(kv[l]);
}

void mhsa__kv_layers_destroy(mhsa_kv_cache **kv, size_t L)
{
    for (size_t l = 0; kv && l < L; l++)
        mhsa_kv_cache_destroy(kv[l]);
    mhsa__free(kv);
}
