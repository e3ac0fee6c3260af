// forward.c — mhsa_forward and mhsa_forward_ex: validation, the QKV
// projection, the split into heads (RoPE fused), the attention over
// (sequence, head, query block) and the output projection.
//
//   qkv = x W_qkv^T + b_qkv                 (B*T, nqkv) prepacked GEMM
//   q, k, v = split(qkv); q *= 1/sqrt(dh)   (B, H|Hkv, T, dh) one pass
//                                           (or read in place: small views)
//   ctx[b, t, h*dh:] = attention(q, k, v)   written in merged layout
//   y = ctx W_out^T + b_out                 (B*T, D)    prepacked GEMM
#include <string.h>

#include "objects.h"
#include "attn/attend.h"
#include "core/fpenv.h"
#include "gemm/linear.h"
#include "attn/small_view.h"
#include "attn/split.h"

// Whether the attention can read q, k and v in place in the projection's
// rows (attn_job.ldqkv) instead of the split's copies: the split was a
// large part of the B8 T12 D32 H4 forward (docs/performance.md,
// "Measurements behind the code"), a copy of every row that the fused
// small view reads once.
// Only where every view is one the fused kernel takes when its values are
// finite: its sizes, fp32 throughout, no rotation to apply (the split
// fuses RoPE), no window cutting a row's first keys, no weights to return
// (the weights pass reads the split), and at least two rows (one row
// decodes, decode.c, which reads the split). A block the kernel declines
// all the same (a non-finite value) sends the call back to the split and
// the tiled path. The backward splits first when it finds the heads not
// split (mhsa_workspace.split_pending).
static int reads_in_place(const mhsa_kernels *k, const mhsa_block *blk,
                          const head_layout *lay,
                          const mhsa_forward_args *a)
{
    size_t t = (size_t)a->T, w = (size_t)blk->cfg.window;
    return k->attn_small && !a->attn && blk->cdt == MHSA_F32 &&
           !lay->rope_half && t >= 2 && t <= MHSA_SMALL_VIEW_ROWS &&
           t <= MHSA_SMALL_VIEW_KEYS && blk->dh <= MHSA_SMALL_VIEW_DH &&
           (w == 0 || w >= t);
}

static mhsa_status check_forward(const char *fn, const mhsa_block *blk,
                                 const mhsa_workspace *ws,
                                 const mhsa_forward_args *a)
{
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st == MHSA_OK)
        st = mhsa__check_weights(fn, blk);
    if (st != MHSA_OK)
        return st;
    if (!a || !a->x || !a->y)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !a ? "a" : !a->x ? "x" : "y");
    st = mhsa__check_rows(fn, blk, ws, a->B, "T", a->T);
    if (st != MHSA_OK)
        return st;
    for (int b = 0; a->seq_len && b < a->B; b++)
        if (a->seq_len[b] < 1 || a->seq_len[b] > a->T)
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "%s: seq_len[%d] = %d must be in 1..T = %d",
                              fn, b, a->seq_len[b], a->T);
    return MHSA_OK;
}

static mhsa_status forward(const char *fn, const mhsa_block *blk,
                           mhsa_workspace *ws, const mhsa_forward_args *a)
{
    mhsa_status st = check_forward(fn, blk, ws, a);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    int packed = blk->packed_for == k;
    size_t D = blk->D, b = (size_t)a->B, t = (size_t)a->T, bt = b * t;

    mhsa__linear(k, &ws->gemm, bt, blk->nqkv, D, a->x, blk->w_qkv,
                 blk->wdt, packed ? blk->w_qkv_packed : NULL, blk->b_qkv,
                 blk->cdt,
                 ws->qkv);
    split_args sp = {
        .batch = b, .t = t, .qkv = ws->qkv, .q = ws->q, .k = ws->k,
        .v = ws->v, .kv_t = t, .dt = MHSA_F32, .tmp = ws->row,
    };
    head_layout lay = mhsa__head_layout(blk);
    int in_place = reads_in_place(k, blk, &lay, a);
    if (!in_place)
        mhsa__split_heads(k, &lay, &sp);
    attn_job j = {
        .batch = b, .H = blk->H, .Hkv = blk->Hkv, .dh = blk->dh, .tq = t,
        .kv_t = t, .causal = blk->cfg.causal,
        .window = (size_t)blk->cfg.window, .mask = a->mask,
        .q_pos = 0, .tk = t, .seq_len = a->seq_len,
        .q = ws->q, .k = ws->k, .v = ws->v, .kv_dtype = MHSA_F32,
        .ctx = ws->ctx, .lse = ws->lse, .attn = a->attn,
        .compute = blk->cdt,
        // Row sums wait in dctx (written by a backward only after
        // mhsa__attn_finish_lse has read them): no log per row here.
        .lsum = ws->dctx,
    };
    if (in_place) {   // q, k, v: a projection row's three parts
        j.q = ws->qkv;
        j.k = ws->qkv + D;
        j.v = ws->qkv + D + blk->Hkv * blk->dh;
        j.ldqkv = blk->nqkv;
    }
    if (!mhsa__attention(k, &ws->attn, &j)) {   // a block declined
        mhsa__split_heads(k, &lay, &sp);
        j.q = ws->q;
        j.k = ws->k;
        j.v = ws->v;
        j.ldqkv = 0;
        in_place = 0;
        mhsa__attention(k, &ws->attn, &j);
    }
    mhsa__linear(k, &ws->gemm, bt, D, D, ws->ctx, blk->w_out, blk->wdt,
                 packed ? blk->w_out_packed : NULL, blk->b_out, blk->cdt,
                 a->y);

    ws->has_forward = 1;
    ws->lse_pending = 1;
    ws->split_pending = in_place;
    ws->fwd_b = b;
    ws->fwd_t = t;
    ws->fwd_x = a->x;
    ws->fwd_mask = a->mask;
    ws->fwd_seq_len = a->seq_len;
    ws->fwd_version = blk->version;
    ws->fwd_kern = k;
    mhsa__fp_leave(fp);
    return MHSA_OK;
}

mhsa_status mhsa_forward(const mhsa_block *blk, mhsa_workspace *ws,
                         const float *x, int B, int T,
                         const float *mask, float *y, float *attn)
{
    mhsa_forward_args a = { x, B, T, mask, NULL, y, attn };
    return forward("mhsa_forward", blk, ws, &a);
}

mhsa_status mhsa_forward_ex(const mhsa_block *blk, mhsa_workspace *ws,
                            const mhsa_forward_args *a)
{
    return forward("mhsa_forward_ex", blk, ws, a);
}
