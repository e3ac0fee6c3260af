// backward.c — mhsa_backward: gradients of the last recorded forward.
//
// With ctx the merged attention output and qkv the projection:
//   db_out += colsum(dy);  dW_out += dy^T ctx;  dctx = dy W_out
//   dq, dk, dv per head from dctx (attention.c, FlashAttention-2 style)
//   db_qkv += colsum(dqkv); dW_qkv += dqkv^T x;  dx = dqkv W_qkv
// Every sum has one fixed order (GEMM K loop, rows in order for the bias
// sums, heads one per task), so the bits do not depend on the thread count.
#include "objects.h"
#include "attn/attend.h"
#include "attn/attend_backward.h"
#include "core/fpenv.h"
#include "attn/split.h"

// acc[c] += sum over rows r of x[r*ld + c], rows in order (kernels.h:
// colsum_add, the same adds on every ISA: the same bits).
static void add_colsum(const mhsa_kernels *k, size_t rows, size_t cols,
                       const float *x, size_t ld, float *acc)
{
    k->colsum_add(rows, cols, x, ld, acc);
}

static mhsa_status check_backward(const mhsa_block *blk,
                                  const mhsa_workspace *ws, const float *dy,
                                  const mhsa_grads *g)
{
    static const char fn[] = "mhsa_backward";
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st == MHSA_OK)
        st = mhsa__check_weights(fn, blk);
    if (st != MHSA_OK)
        return st;
    if (!dy || !g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !dy ? "dy" : "g");
    const mhsa_grads_impl *gi = (const mhsa_grads_impl *)g;
    if (gi->D != blk->D || gi->nqkv != blk->nqkv ||
        gi->bias != blk->cfg.bias)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: g was made for d_model = %zu, bias = %d, the "
                          "block has d_model = %zu, bias = %d", fn, gi->D,
                          gi->bias, blk->D, blk->cfg.bias);
    if (!ws->has_forward)
        return mhsa__fail(MHSA_ERR_STATE,
                          "%s: the workspace holds no forward to "
                          "differentiate (call mhsa_forward first)", fn);
    if (ws->fwd_version != blk->version)
        return mhsa__fail(MHSA_ERR_STATE,
                          "%s: the block's weights changed after the "
                          "recorded forward", fn);
    return MHSA_OK;
}

// The recorded forward as an attention job: its view gives what each row
// saw, the same rows and keys the forward's tiles visited.
static attn_job recorded_job(const mhsa_block *blk, const mhsa_workspace *ws)
{
    size_t T = ws->fwd_t;
    attn_job j = {
        .batch = ws->fwd_b, .H = blk->H, .Hkv = blk->Hkv, .dh = blk->dh,
        .tq = T, .kv_t = T, .causal = blk->cfg.causal,
        .window = (size_t)blk->cfg.window, .mask = ws->fwd_mask,
        .q_pos = 0, .tk = T, .seq_len = ws->fwd_seq_len,
        .q = ws->q, .k = ws->k, .v = ws->v, .kv_dtype = MHSA_F32,
        .ctx = ws->ctx, .lse = ws->lse, .attn = NULL, .compute = blk->cdt,
    };
    return j;
}

mhsa_status mhsa_backward(const mhsa_block *blk, mhsa_workspace *ws,
                          const float *dy, float *dx, mhsa_grads *g)
{
    mhsa_status st = check_backward(blk, ws, dy, g);
    if (st != MHSA_OK)
        return st;
    mhsa_fpstate fp = mhsa__fp_enter();
    const mhsa_kernels *k = mhsa__kernels();
    const mhsa_gemm_scratch *s = &ws->gemm;
    size_t D = blk->D, nqkv = blk->nqkv, bt = ws->fwd_b * ws->fwd_t;
    const float *x = ws->fwd_x;
    if (ws->lse_pending) {   // before dctx, which holds the row sums
        mhsa__attn_finish_lse(k, ws->fwd_b * blk->H * ws->fwd_t, ws->lse,
                              ws->dctx);
        ws->lse_pending = 0;
    }
    if (ws->split_pending) {   // the forward read q, k, v in place
        split_args sp = {
            .batch = ws->fwd_b, .t = ws->fwd_t, .qkv = ws->qkv, .q = ws->q,
            .k = ws->k, .v = ws->v, .kv_t = ws->fwd_t, .dt = MHSA_F32,
            .tmp = ws->row,
        };
        head_layout lay = mhsa__head_layout(blk);
        mhsa__split_heads(k, &lay, &sp);
        ws->split_pending = 0;
    }

    // Output projection.
    if (blk->cfg.bias)
        add_colsum(k, bt, D, dy, D, g->b_out);
    // (Every product in the block's compute dtype: gemm.h.)
    mhsa_dtype cd = blk->cdt;
    mhsa_sgemm_cd(k, cd, s, 1, 0, D, D, bt, 1.0f, dy, D, ws->ctx, MHSA_F32,
                  D, NULL, 1.0f, g->w_out, D);
    mhsa_sgemm_cd(k, cd, s, 0, 0, bt, D, D, 1.0f, dy, D, blk->w_out,
                  blk->wdt, D, NULL, 0.0f, ws->dctx, D);
    // Attention, into dqkv (B*T, nqkv) = [dq | dk | dv] per row, then
    // back through the rotation of q and k.
    attn_job job = recorded_job(blk, ws);
    attn_grads grads = { ws->dctx, D, ws->qkv, nqkv };
    mhsa__attention_backward(k, &ws->attn, &job, &grads);
    head_layout lay = mhsa__head_layout(blk);
    mhsa__rope_backward(&lay, ws->fwd_b, ws->fwd_t, ws->qkv);
    // QKV projection.
    const float *dqkv = ws->qkv;
    if (blk->cfg.bias)
        add_colsum(k, bt, nqkv, dqkv, nqkv, g->b_qkv);
    mhsa_sgemm_cd(k, cd, s, 1, 0, nqkv, D, bt, 1.0f, dqkv, nqkv, x,
                  MHSA_F32, D, NULL, 1.0f, g->w_qkv, D);
    if (dx)
        mhsa_sgemm_cd(k, cd, s, 0, 0, bt, D, nqkv, 1.0f, dqkv, nqkv,
                      blk->w_qkv, blk->wdt, D, NULL, 0.0f, dx, D);
    mhsa__fp_leave(fp);
    return MHSA_OK;
}
