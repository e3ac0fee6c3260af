// cached.c — mhsa_forward_cached and mhsa_forward_cached_ex: append each
// sequence's new rows to its part of the KV cache and attend over its
// whole history; and mhsa__forward_cached_qkv (cached_qkv.h), the same
// calls' middle part for rows a model projected itself.
//
// The same pipeline as mhsa_forward (projection, split into heads with
// RoPE at each sequence's own positions, attention, output projection),
// with K and V split straight into the cache at positions len[b] ...,
// rounded to the cache's storage type. Every sequence has its own length;
// the attention description (attend.h) says so per sequence.
#include <string.h>

#include "objects.h"
#include "attn/attend.h"
#include "cached_qkv.h"
#include "cached_step.h"
#include "core/fpenv.h"
#include "gemm/linear.h"
#include "attn/split.h"

// legacy: the rules of mhsa_forward_cached (B the same since the last
// reset, every sequence appends t_new rows).
static mhsa_status check_cached(const char *fn, const mhsa_block *blk,
                                const mhsa_workspace *ws,
                                const mhsa_kv_cache *c,
                                const mhsa_cached_args *a, int legacy)
{
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st != MHSA_OK)
        return st;
    if (!c)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: cache is NULL", fn);
    if (c->blk != blk || c->blk_id != blk->id)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: cache was created for another block", fn);
    if (!a || !a->x_new || !a->y)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !a ? "a" : !a->x_new ? "x_new" : "y");
    // The workspace holds max_seq_len (or, sized, max_t) rows per sequence
    // and its decode partials cover max_t keys; with n_new a step may be
    // wider than what any one sequence appends.
    st = mhsa__check_rows(fn, blk, ws, a->B, "t_new", a->t_new);
    if (st != MHSA_OK)
        return st;
    if (c->capacity > ws->max_t)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: the cache's capacity = %zu exceeds the "
                          "workspace's max_t = %zu", fn, c->capacity,
                          ws->max_t);
    if ((size_t)a->B > c->max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d exceeds the cache's max_batch = %zu",
                          fn, a->B, c->max_batch);
    if (legacy && c->batch != 0 && c->batch != (size_t)a->B)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d differs from B = %zu of the earlier "
                          "calls since the last reset", fn, a->B, c->batch);
    for (int b = 0; a->n_new && b < a->B; b++)
        if (a->n_new[b] < 0 || a->n_new[b] > a->t_new)
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "%s: n_new[%d] = %d must be in 0..t_new = %d",
                              fn, b, a->n_new[b], a->t_new);
    for (int b = 0; b < a->B; b++) {
        size_t n = a->n_new ? (size_t)a->n_new[b] : (size_t)a->t_new;
        if (n > c->capacity - c->len[b])
            return mhsa__fail(MHSA_ERR_SHAPE,
                              "%s: sequence %d: len = %zu + %zu new exceeds "
                              "the cache's capacity = %zu", fn, b, c->len[b],
                              n, c->capacity);
    }
    return MHSA_OK;
}

// The middle of the pipeline, between the projections: the projected
// rows qkv (b * t, nqkv) split into heads (q into the workspace, k and v
// straight into the cache at each sequence's length, rounded to its
// storage type, RoPE at each row's position), then each sequence's new
// rows attend over its cache into ctx (b * t, D). Rows past a sequence's
// n_new are not computed.
static void attend_new_rows(const mhsa_kernels *k, const mhsa_block *blk,
                            mhsa_workspace *ws, mhsa_kv_cache *cache,
                            size_t b, size_t t, const int *n_new,
                            const float *qkv, float *ctx)
{
    split_args sp = {
        .batch = b, .t = t, .qkv = qkv, .q = ws->q, .k = cache->k,
        .v = cache->v, .kv_t = cache->capacity, .dt = cache->dtype,
        .pos = cache->len, .rows = n_new, .tmp = ws->row,
    };
    head_layout lay = mhsa__head_layout(blk);
    mhsa__split_heads(k, &lay, &sp);
    attn_job j = {
        .batch = b, .H = blk->H, .Hkv = blk->Hkv, .dh = blk->dh, .tq = t,
        .kv_t = cache->capacity, .causal = 1,
        .window = (size_t)blk->cfg.window, .mask = NULL,
        .kv_len = cache->len, .n_new = n_new,
        .q = ws->q, .k = cache->k, .v = cache->v, .kv_dtype = cache->dtype,
        .ctx = ctx, .lse = NULL, .attn = NULL, .compute = blk->cdt,
    };
    mhsa__attention(k, &ws->attn, &j);
}

static mhsa_status cached(const char *fn, const mhsa_block *blk,
                          mhsa_workspace *ws, mhsa_kv_cache *cache,
                          const mhsa_cached_args *a, int legacy)
{
    mhsa_status st = check_cached(fn, blk, ws, cache, a, legacy);
    if (st == MHSA_OK)
        st = mhsa__check_weights(fn, blk);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    int packed = blk->packed_for == k;
    size_t D = blk->D, b = (size_t)a->B, t = (size_t)a->t_new, bt = b * t;

    ws->has_forward = 0;   // the workspace's views are reused below
    // One token of one sequence: the whole block in one parallel region
    // (cached_step.c), with the bits of the pipeline below.
    if (bt == 1 && (!a->n_new || a->n_new[0] == 1) &&
        mhsa__cached_step(k, blk, ws, cache, a->x_new, ws->qkv, ws->ctx,
                          a->y)) {
        if (legacy)
            cache->batch = 1;
        mhsa__fp_leave(fp);
        return MHSA_OK;
    }
    mhsa__linear(k, &ws->gemm, bt, blk->nqkv, D, a->x_new, blk->w_qkv,
                 blk->wdt, packed ? blk->w_qkv_packed : NULL, blk->b_qkv,
                 blk->cdt,
                 ws->qkv);
    attend_new_rows(k, blk, ws, cache, b, t, a->n_new, ws->qkv, ws->ctx);
    mhsa__linear(k, &ws->gemm, bt, D, D, ws->ctx, blk->w_out, blk->wdt,
                 packed ? blk->w_out_packed : NULL, blk->b_out, blk->cdt,
                 a->y);
    for (size_t s = 0; s < b; s++) {
        size_t n = a->n_new ? (size_t)a->n_new[s] : t;
        // Rows past a sequence's new ones hold no token: zeros, as
        // documented (their ctx rows were never computed).
        memset(a->y + (s * t + n) * D, 0, (t - n) * D * sizeof(float));
        cache->len[s] += n;
    }
    if (legacy)
        cache->batch = b;
    mhsa__fp_leave(fp);
    return MHSA_OK;
}

mhsa_status mhsa_forward_cached(const mhsa_block *blk, mhsa_workspace *ws,
                                mhsa_kv_cache *cache,
                                const float *x_new, int B, int t_new, float *y)
{
    mhsa_cached_args a = { x_new, B, t_new, NULL, y };
    return cached("mhsa_forward_cached", blk, ws, cache, &a, 1);
}

mhsa_status mhsa_forward_cached_ex(const mhsa_block *blk, mhsa_workspace *ws,
                                   mhsa_kv_cache *cache,
                                   const mhsa_cached_args *a)
{
    return cached("mhsa_forward_cached_ex", blk, ws, cache, a, 0);
}

mhsa_status mhsa__forward_cached_qkv(const mhsa_block *blk,
                                     mhsa_workspace *ws,
                                     mhsa_kv_cache *cache, const float *qkv,
                                     int n, float *ctx)
{
    static const char fn[] = "mhsa__forward_cached_qkv";
    if (!qkv || !ctx)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !qkv ? "qkv" : "ctx");
    // The rules of mhsa_forward_cached with B = 1, qkv in x_new's place
    // and ctx in y's.
    mhsa_cached_args a = { qkv, 1, n, NULL, ctx };
    mhsa_status st = check_cached(fn, blk, ws, cache, &a, 1);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    ws->has_forward = 0;
    // (Without x the step only reads qkv.)
    if (n != 1 || !mhsa__cached_step(k, blk, ws, cache, NULL, (float *)qkv,
                                     ctx, NULL)) {
        attend_new_rows(k, blk, ws, cache, 1, (size_t)n, NULL, qkv, ctx);
        cache->len[0] += (size_t)n;
    }
    cache->batch = 1;
    mhsa__fp_leave(fp);
    return MHSA_OK;
}
