// kv_cache.c — the KV cache's lifetime: keys and values of every decoded
// position, already split by kv head, (max_batch, Hkv, capacity, dh) each,
// stored as fp32, f16 or bf16, and each sequence's own length.
#include <string.h>

#include "objects.h"

static mhsa_status create(const char *fn, const mhsa_block *blk,
                          const mhsa_kv_config *cfg, mhsa_kv_cache **out)
{
    if (!blk || !cfg || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !blk ? "blk" : !cfg ? "cfg" : "out");
    int max_batch = cfg->max_batch, capacity = cfg->capacity;
    if (max_batch < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: max_batch = %d must be >= 1", fn, max_batch);
    if (capacity < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: capacity = %d must be >= 1", fn, capacity);
    if (cfg->dtype != MHSA_F32 && cfg->dtype != MHSA_F16 &&
        cfg->dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: dtype = %d is not an mhsa_dtype (MHSA_F32, "
                          "MHSA_F16 or MHSA_BF16)", fn, (int)cfg->dtype);
    if (!blk->cfg.causal)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: the block is not causal (causal = 0); "
                          "decoding with a KV cache is autoregressive", fn);
    if (capacity > blk->cfg.max_seq_len)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: capacity = %d exceeds max_seq_len = %d", fn,
                          capacity, blk->cfg.max_seq_len);
    size_t es = mhsa_dtype_size(cfg->dtype), each;
    if (!mhsa__mul3((size_t)max_batch, (size_t)capacity,
                    blk->Hkv * blk->dh, &each) ||
        each > SIZE_MAX / (2 * es))
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: max_batch = %d x capacity = %d x d_model = %d "
                          "overflows size_t", fn, max_batch, capacity,
                          blk->cfg.d_model);
    mhsa_kv_cache *c = mhsa__alloc(sizeof *c);
    char *kv = c ? mhsa__alloc(2 * each * es) : NULL;
    size_t *len = kv ? mhsa__alloc((size_t)max_batch * sizeof *len) : NULL;
    if (!len) {
        mhsa__free(kv);
        mhsa__free(c);
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: cannot allocate %zu bytes", fn, 2 * each * es);
    }
    c->blk = blk;
    c->blk_id = blk->id;
    c->max_batch = (size_t)max_batch;
    c->capacity = (size_t)capacity;
    c->len = len;
    c->dtype = cfg->dtype;
    c->k = kv;
    c->v = kv + each * es;
    c->bytes = 2 * each * es + (size_t)max_batch * sizeof *len + sizeof *c;
    *out = c;
    return MHSA_OK;
}

mhsa_status mhsa_kv_cache_create_ex(const mhsa_block *blk,
                                    const mhsa_kv_config *cfg,
                                    mhsa_kv_cache **out)
{
    return create("mhsa_kv_cache_create_ex", blk, cfg, out);
}

mhsa_status mhsa_kv_cache_create(const mhsa_block *blk, int max_batch,
                                 int capacity, mhsa_kv_cache **out)
{
    mhsa_kv_config cfg = { max_batch, capacity, MHSA_F32 };
    return create("mhsa_kv_cache_create", blk, &cfg, out);
}

void mhsa_kv_cache_destroy(mhsa_kv_cache *c)
{
    if (!c)
        return;
    mhsa__free(c->k);
    mhsa__free(c->len);
    mhsa__free(c);
}

// A reset cache behaves bit for bit like a fresh one: positions past a
// sequence's length are never read, so only the counters go back to zero.
void mhsa_kv_cache_reset(mhsa_kv_cache *c)
{
    if (!c)
        return;
    memset(c->len, 0, c->max_batch * sizeof *c->len);
    c->batch = 0;
}

mhsa_status mhsa_kv_cache_reset_seq(mhsa_kv_cache *c, int b)
{
    if (!c)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_kv_cache_reset_seq: c is NULL");
    if (b < 0 || (size_t)b >= c->max_batch)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_kv_cache_reset_seq: b = %d must be in 0..%zu "
                          "(the cache's max_batch - 1)", b, c->max_batch - 1);
    c->len[b] = 0;
    return MHSA_OK;
}

// The longest sequence's length.
int mhsa_kv_cache_len(const mhsa_kv_cache *c)
{
    size_t most = 0;
    for (size_t b = 0; c && b < c->max_batch; b++)
        most = c->len[b] > most ? c->len[b] : most;
    return (int)most;
}

int mhsa_kv_cache_seq_len(const mhsa_kv_cache *c, int b)
{
    if (!c || b < 0 || (size_t)b >= c->max_batch)
        return 0;
    return (int)c->len[b];
}

size_t mhsa_kv_cache_bytes(const mhsa_kv_cache *c) { return c ? c->bytes : 0; }
