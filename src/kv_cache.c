// kv_cache.c — the KV cache's lifetime: keys and values of every decoded
// position, already split by head, (max_batch, H, capacity, dh) each.
#include "mhsa_internal.h"

mhsa_status mhsa_kv_cache_create(const mhsa_block *blk, int max_batch,
                                 int capacity, mhsa_kv_cache **out)
{
    static const char fn[] = "mhsa_kv_cache_create";
    if (!blk)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: blk is NULL", fn);
    if (!out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: out is NULL", fn);
    if (max_batch < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: max_batch = %d must be >= 1", fn, max_batch);
    if (capacity < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: capacity = %d must be >= 1", fn, capacity);
    if (!blk->cfg.causal)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: the block is not causal (causal = 0); "
                          "decoding with a KV cache is autoregressive", fn);
    if (capacity > blk->cfg.max_seq_len)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: capacity = %d exceeds max_seq_len = %d", fn,
                          capacity, blk->cfg.max_seq_len);
    size_t each;
    if (!mhsa__mul3((size_t)max_batch, (size_t)capacity, blk->D, &each) ||
        each > SIZE_MAX / (2 * sizeof(float)))
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: max_batch = %d x capacity = %d x d_model = %d "
                          "overflows size_t", fn, max_batch, capacity,
                          blk->cfg.d_model);
    mhsa_kv_cache *c = mhsa__alloc(sizeof *c);
    float *kv = c ? mhsa__alloc(2 * each * sizeof(float)) : NULL;
    if (!kv) {
        mhsa__free(c);
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: cannot allocate %zu bytes", fn,
                          2 * each * sizeof(float));
    }
    c->blk = blk;
    c->blk_id = blk->id;
    c->max_batch = (size_t)max_batch;
    c->capacity = (size_t)capacity;
    c->k = kv;
    c->v = kv + each;
    c->bytes = 2 * each * sizeof(float) + sizeof *c;
    *out = c;
    return MHSA_OK;
}

void mhsa_kv_cache_destroy(mhsa_kv_cache *c)
{
    if (!c)
        return;
    mhsa__free(c->k);
    mhsa__free(c);
}

// A reset cache behaves bit for bit like a fresh one: positions past len are
// never read, so only the counters go back to zero.
void mhsa_kv_cache_reset(mhsa_kv_cache *c)
{
    if (!c)
        return;
    c->len = 0;
    c->batch = 0;
}

int mhsa_kv_cache_len(const mhsa_kv_cache *c) { return c ? (int)c->len : 0; }

size_t mhsa_kv_cache_bytes(const mhsa_kv_cache *c) { return c ? c->bytes : 0; }
