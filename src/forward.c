// forward.c — mhsa_forward and mhsa_forward_cached: validation, the QKV
// projection, the fused split into heads, the attention loop over
// (batch, head, query block) and the output projection.
//
//   qkv = x W_qkv^T + b_qkv                 (B*T, 3D)   prepacked GEMM
//   q, k, v = split(qkv); q *= 1/sqrt(dh)   (B, H, T, dh) one permute pass
//   ctx[b, t, h*dh:] = attention(q, k, v)   written in merged layout
//   y = ctx W_out^T + b_out                 (B*T, D)    prepacked GEMM
#include <math.h>
#include <omp.h>
#include <string.h>

#include "attention.h"
#include "forward.h"
#include "fpenv.h"

int mhsa__threads(const mhsa_workspace *ws, double flops, size_t tasks)
{
    // Below ~0.25 MFLOP a parallel region costs more than it saves.
    if (flops < 262144.0 || tasks < 2)
        return 1;
    int nt = omp_get_max_threads();
    if (nt > ws->max_threads)
        nt = ws->max_threads;
    if ((size_t)nt > tasks)
        nt = (int)tasks;
    return mhsa__pool_threads(nt < 1 ? 1 : nt);
}

// y (rows, n) = x (rows, kdim) W^T + b, with W (n, kdim) prepacked when the
// block was packed for this table.
void mhsa__linear(const mhsa_kernels *k, const mhsa_workspace *ws,
                  size_t rows, size_t n, size_t kdim, const float *x,
                  const float *w, const float *w_packed, const float *b,
                  float *y)
{
    if (b)   // start from the bias, then accumulate x W^T onto it
        for (size_t r = 0; r < rows; r++)
            memcpy(y + r * n, b, n * sizeof(float));
    if (rows == 1) {
        // One token: stream W once, unpacked (a GEMM tile would waste
        // mr - 1 rows). Fixed chunks of outputs, one writer each.
        enum { CH = 64 };
        size_t chunks = (n + CH - 1) / CH;
        int nt = mhsa__threads(ws, 2.0 * (double)n * (double)kdim, chunks);
#pragma omp parallel num_threads(nt) if (nt > 1)
        {
            mhsa_fpstate fp = mhsa__fp_enter();
#pragma omp for schedule(static)
            for (size_t c = 0; c < chunks; c++) {
                size_t j0 = c * CH, m = n - j0 < CH ? n - j0 : CH;
                k->gemv_n(m, kdim, w + j0 * kdim, kdim, x, y + j0,
                          b ? 1.0f : 0.0f);
            }
            mhsa__fp_leave(fp);
        }
        return;
    }
    mhsa_sgemm(k, &ws->gemm, 0, 1, rows, n, kdim, 1.0f, x, kdim, w, kdim,
               w_packed, b ? 1.0f : 0.0f, y, n);
}

// Splits rows of qkv (bt rows of 3D) for `batch` sequences of `t` tokens:
// q into (B, H, t, dh) scaled by 1/sqrt(dh); k and v into (B, H, kv_t, dh)
// at position kv_pos (kv_t = t for a plain forward, the cache capacity for
// a cached one).
void mhsa__split_heads(const mhsa_kernels *k, const mhsa_block *blk,
                       size_t batch, size_t t, const float *qkv, float *q,
                       float *kd, float *vd, size_t kv_t, size_t kv_pos)
{
    size_t D = blk->D, H = blk->H, dh = blk->dh;
    float scale = 1.0f / sqrtf((float)dh);
    float *dst[3] = { q, kd + kv_pos * dh, vd + kv_pos * dh };
    size_t dst_t[3] = { t, kv_t, kv_t };
    float sc[3] = { scale, 1.0f, 1.0f };
    for (int i = 0; i < 3; i++) {
        mhsa_permute_args pa = {
            batch, t, H, dh,
            qkv + (size_t)i * D, t * 3 * D, 3 * D, dh,
            dst[i], H * dst_t[i] * dh, dh, dst_t[i] * dh,
            sc[i],
        };
        k->permute(&pa);
    }
}

void mhsa__attention(const mhsa_kernels *k, mhsa_workspace *ws,
                     const attn_job *j)
{
    if (mhsa__is_decode(j)) {
        mhsa__attention_decode(k, ws, j);
        return;
    }
    size_t br = mhsa__attn_br(k), dh = j->dh;
    size_t nqb = (j->tq + br - 1) / br;
    size_t bhs = j->batch * j->H, tasks = bhs * nqb;
    double flops = 4.0 * (double)j->batch * (double)j->H * (double)j->tq *
                   (double)j->tk * (double)dh;
    int nt = mhsa__threads(ws, flops, tasks);
    // With several query blocks per head, each head's K^T and V tiles are
    // packed once up front instead of once per block (at T = 512 a K tile
    // was packed four times on average). They go into the QKV projection
    // buffer, which split_heads has finished with; only when they fit.
    size_t kpf = mhsa__head_kpack_floats(k, j->tk, dh);
    size_t per_head = kpf + mhsa__head_vpack_floats(k, j->tk, dh);
    size_t bc = mhsa__attn_bc(k), ntiles = (j->tk + bc - 1) / bc;
    int prepack = nqb >= 2 && !j->attn &&
                  bhs * (per_head + ntiles) <= 3 * ws->max_batch *
                                               ws->max_t * j->H * dh;
    float *vbad = ws->qkv + bhs * per_head;   // (bhs, ntiles), see head_args
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
    mhsa_fpstate fp = mhsa__fp_enter();
    if (prepack) {
#pragma omp for schedule(static)
        for (size_t pt = 0; pt < bhs * ntiles; pt++) {
            size_t bh = pt / ntiles;
            float *kp = ws->qkv + bh * per_head;
            vbad[pt] = (float)mhsa__head_pack_kv(k, j->tk, dh, pt % ntiles,
                                                 j->k + bh * j->kv_t * dh,
                                                 j->v + bh * j->kv_t * dh,
                                                 kp, kp + kpf);
        }   // the implied barrier: every head is packed before it is used
    }
#pragma omp for schedule(static)
    for (size_t task = 0; task < tasks; task++) {
        size_t bh = task / nqb, qb = task % nqb;
        size_t b = bh / j->H, h = bh % j->H;
        size_t r0 = qb * br, tq = j->tq - r0 < br ? j->tq - r0 : br;
        float *tiles = ws->tiles + (size_t)omp_get_thread_num() *
                                   ws->tile_floats;
        head_args a = {
            .tq = tq, .tk = j->tk, .dh = dh,
            .q_pos = j->q_pos + r0,
            .causal = j->causal,
            .mask = j->mask ? j->mask + r0 * j->tk : NULL,
            .ldmask = j->tk,
            .scale = 1.0f / sqrtf((float)dh),
            .q = j->q + (bh * j->tq + r0) * dh,
            .k = j->k + bh * j->kv_t * dh,
            .v = j->v + bh * j->kv_t * dh,
            .o = j->ctx + (b * j->tq + r0) * j->H * dh + h * dh,
            .ldo = j->H * dh,
            .lse = j->lse ? j->lse + bh * j->tq + r0 : NULL,
            .attn = j->attn ? j->attn + (bh * j->tq + r0) * j->tk : NULL,
            .ldattn = j->tk,
            .kpack = prepack ? ws->qkv + bh * per_head : NULL,
            .vpack = prepack ? ws->qkv + bh * per_head + kpf : NULL,
            .vbad = prepack ? vbad + bh * ntiles : NULL,
        };
        mhsa__head_forward(k, &a, tiles);
        if (a.attn)
            mhsa__head_weights(k, &a, tiles);
    }
    mhsa__fp_leave(fp);
    }
}

static mhsa_status check_forward(const mhsa_block *blk,
                                 const mhsa_workspace *ws, const float *x,
                                 int B, int T, const float *y)
{
    static const char fn[] = "mhsa_forward";
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st != MHSA_OK)
        return st;
    if (!x)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: x is NULL", fn);
    if (!y)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: y is NULL", fn);
    if (B <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: B = %d must be > 0",
                          fn, B);
    if (T <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: T = %d must be > 0",
                          fn, T);
    if ((size_t)B > ws->max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d exceeds the workspace's max_batch = %zu",
                          fn, B, ws->max_batch);
    if (T > blk->cfg.max_seq_len)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: T = %d exceeds max_seq_len = %d", fn, T,
                          blk->cfg.max_seq_len);
    return MHSA_OK;
}

mhsa_status mhsa_forward(const mhsa_block *blk, mhsa_workspace *ws,
                         const float *x, int B, int T,
                         const float *mask, float *y, float *attn)
{
    mhsa_status st = check_forward(blk, ws, x, B, T, y);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    int packed = blk->packed_for == k;
    size_t D = blk->D, b = (size_t)B, t = (size_t)T, bt = b * t;

    mhsa__linear(k, ws, bt, 3 * D, D, x, blk->w_qkv,
                 packed ? blk->w_qkv_packed : NULL, blk->b_qkv, ws->qkv);
    mhsa__split_heads(k, blk, b, t, ws->qkv, ws->q, ws->k, ws->v, t, 0);
    attn_job j = {
        .batch = b, .H = blk->H, .dh = blk->dh, .tq = t, .tk = t,
        .kv_t = t, .q_pos = 0, .causal = blk->cfg.causal, .mask = mask,
        .q = ws->q, .k = ws->k, .v = ws->v, .ctx = ws->ctx, .lse = ws->lse,
        .attn = attn,
    };
    mhsa__attention(k, ws, &j);
    mhsa__linear(k, ws, bt, D, D, ws->ctx, blk->w_out,
                 packed ? blk->w_out_packed : NULL, blk->b_out, y);

    ws->has_forward = 1;
    ws->fwd_b = b;
    ws->fwd_t = t;
    ws->fwd_x = x;
    ws->fwd_mask = mask;
    ws->fwd_version = blk->version;
    ws->fwd_kern = k;
    mhsa__fp_leave(fp);
    return MHSA_OK;
}

static mhsa_status check_cached(const mhsa_block *blk,
                                const mhsa_workspace *ws,
                                const mhsa_kv_cache *c, const float *x,
                                int B, int t_new, const float *y)
{
    static const char fn[] = "mhsa_forward_cached";
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st != MHSA_OK)
        return st;
    if (!c)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: cache is NULL", fn);
    if (c->blk != blk || c->blk_id != blk->id)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: cache was created for another block", fn);
    if (!x)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: x_new is NULL", fn);
    if (!y)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: y is NULL", fn);
    if (B <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: B = %d must be > 0",
                          fn, B);
    if (t_new <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: t_new = %d must be > 0", fn, t_new);
    if ((size_t)B > ws->max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d exceeds the workspace's max_batch = %zu",
                          fn, B, ws->max_batch);
    if ((size_t)B > c->max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d exceeds the cache's max_batch = %zu",
                          fn, B, c->max_batch);
    if (c->batch != 0 && c->batch != (size_t)B)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: B = %d differs from B = %zu of the earlier "
                          "calls since the last reset", fn, B, c->batch);
    if ((size_t)t_new > c->capacity - c->len)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: len = %zu + t_new = %d exceeds the cache's "
                          "capacity = %zu", fn, c->len, t_new, c->capacity);
    return MHSA_OK;
}

mhsa_status mhsa_forward_cached(const mhsa_block *blk, mhsa_workspace *ws,
                                mhsa_kv_cache *cache,
                                const float *x_new, int B, int t_new, float *y)
{
    mhsa_status st = check_cached(blk, ws, cache, x_new, B, t_new, y);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    int packed = blk->packed_for == k;
    size_t D = blk->D, b = (size_t)B, t = (size_t)t_new, bt = b * t;
    size_t cap = cache->capacity, len = cache->len;

    ws->has_forward = 0;   // the workspace's views are reused below
    mhsa__linear(k, ws, bt, 3 * D, D, x_new, blk->w_qkv,
                 packed ? blk->w_qkv_packed : NULL, blk->b_qkv, ws->qkv);
    mhsa__split_heads(k, blk, b, t, ws->qkv, ws->q, cache->k, cache->v, cap,
                      len);
    attn_job j = {
        .batch = b, .H = blk->H, .dh = blk->dh, .tq = t, .tk = len + t,
        .kv_t = cap, .q_pos = len, .causal = 1, .mask = NULL,
        .q = ws->q, .k = cache->k, .v = cache->v, .ctx = ws->ctx,
        .lse = NULL, .attn = NULL,
    };
    mhsa__attention(k, ws, &j);
    mhsa__linear(k, ws, bt, D, D, ws->ctx, blk->w_out,
                 packed ? blk->w_out_packed : NULL, blk->b_out, y);
    cache->len = len + t;
    cache->batch = b;
    mhsa__fp_leave(fp);
    return MHSA_OK;
}
