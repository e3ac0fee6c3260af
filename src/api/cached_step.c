// cached_step.c — one token of one sequence through a block with its KV
// cache (mhsa_forward_cached with B = 1, t_new = 1, fp32 compute) in one
// parallel region: the whole step is a few hundred microseconds of
// streaming (at SmolLM2's D 576, 3.5 MB of fp32 weights and 0.8 MB of
// cache rows at 512 positions), where three regions (the QKV projection,
// the attention, the output projection) woke the pool three times.
//
// In the region every thread streams its share of the rows of w_qkv, then
// one thread splits the projection into heads (and into the cache), then
// the threads share the attention's key chunks (decode.c) and the rows of
// w_out. The same kernels on the same rows as the general path (cached.c:
// mhsa__linear's one-row gemv, mhsa__split_heads, mhsa__attention_decode),
// and each output row of a gemv sums alone (kernels.h), so the bits are
// the general path's whatever the team: the threads split rows, never
// sums. The team is sized once for the whole step by core/threads.h's rule
// (its FLOPs: both projections and the attention); below the threshold no
// region is entered. mhsa__forward_cached_qkv runs the same region
// without the projections, which its caller computed.
#include "objects.h"
#include "attn/decode.h"
#include "attn/split.h"
#include "cached_step.h"
#include "core/threads.h"
#include "gemm/gemv_share.h"

typedef struct step_ctx {
    const mhsa_kernels *k;
    const mhsa_block *blk;
    const float *x;
    float *qkv, *ctx, *y;
    const head_layout *lay;
    const split_args *sp;
    const attn_scratch *as;
    const attn_view *view;
} step_ctx;

// This thread's rows of an n x d product: mhsa__linear's one-row path (the
// bias copied, then the product added with beta = 1) on a part of them.
static void gemv_share(const mhsa_kernels *k, size_t n, size_t d,
                       const void *w, mhsa_dtype wdt, const float *b,
                       const float *x, float *y)
{
    size_t lo, hi;
    mhsa__gemv_share(k, n, d, w, wdt, b, 0, x, y, &lo, &hi);
}

static void step_body(void *p)
{
    const step_ctx *c = p;
    const mhsa_block *blk = c->blk;
    if (c->x) {   // (the same for every thread of the team)
        gemv_share(c->k, blk->nqkv, blk->D, blk->w_qkv, blk->wdt,
                   blk->b_qkv, c->x, c->qkv);
#pragma omp barrier
    }
    // A few KB of copies (and rotations): one thread; the single's
    // barrier puts q, k and v in place before any thread reads them.
#pragma omp single
    mhsa__split_heads(c->k, c->lay, c->sp);
    mhsa__decode_team(c->k, c->as, c->view);   // ends with a barrier
    if (c->y)
        gemv_share(c->k, blk->D, blk->D, blk->w_out, blk->wdt, blk->b_out,
                   c->ctx, c->y);
}

int mhsa__cached_step(const mhsa_kernels *k, const mhsa_block *blk,
                      mhsa_workspace *ws, mhsa_kv_cache *cache,
                      const float *x, float *qkv, float *ctx, float *y)
{
    if (blk->cdt != MHSA_F32)
        return 0;
    size_t D = blk->D;
    split_args sp = {
        .batch = 1, .t = 1, .qkv = qkv, .q = ws->q, .k = cache->k,
        .v = cache->v, .kv_t = cache->capacity, .dt = cache->dtype,
        .pos = cache->len, .rows = NULL, .tmp = ws->row,
    };
    head_layout lay = mhsa__head_layout(blk);
    attn_job j = {
        .batch = 1, .H = blk->H, .Hkv = blk->Hkv, .dh = blk->dh, .tq = 1,
        .kv_t = cache->capacity, .causal = 1,
        .window = (size_t)blk->cfg.window, .mask = NULL,
        .kv_len = cache->len, .n_new = NULL,
        .q = ws->q, .k = cache->k, .v = cache->v, .kv_dtype = cache->dtype,
        .ctx = ctx, .lse = NULL, .attn = NULL, .compute = MHSA_F32,
    };
    attn_view view = mhsa__attn_view(&j, ws->attn.seqs);
    if (!view.seq[0].decodes)
        return 0;
    double flops;
    mhsa__decode_plan(&ws->attn, &view, &flops);
    if (x)
        flops += 2.0 * (double)blk->nqkv * (double)D;
    if (y)
        flops += 2.0 * (double)D * (double)D;
    int max = ws->attn.max_threads < ws->gemm.max_threads
              ? ws->attn.max_threads : ws->gemm.max_threads;
    step_ctx c = { k, blk, x, qkv, ctx, y, &lay, &sp, &ws->attn, &view };
    // Pieces: 64-row parts of the smaller projection (D rows), as the
    // one-row gemv counts them.
    mhsa__team_run(mhsa__threads(max, flops, (D + 63) / 64), step_body, &c);
    cache->len[0] += 1;
    return 1;
}
