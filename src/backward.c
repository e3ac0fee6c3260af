// backward.c — mhsa_backward: gradients of the last recorded forward.
//
// With ctx the merged attention output and qkv the projection:
//   db_out += colsum(dy);  dW_out += dy^T ctx;  dctx = dy W_out
//   dq, dk, dv per head from dctx (attention.c, FlashAttention-2 style)
//   db_qkv += colsum(dqkv); dW_qkv += dqkv^T x;  dx = dqkv W_qkv
// Every sum has one fixed order (GEMM K loop, rows in order for the bias
// sums, heads one per task), so the bits do not depend on the thread count.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "attention.h"
#include "forward.h"
#include "fpenv.h"

// acc[c] += sum over rows r of x[r*ld + c], rows in order.
static void add_colsum(size_t rows, size_t cols, const float *x, size_t ld,
                       float *acc)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            acc[c] += x[r * ld + c];
}

static mhsa_status check_backward(const mhsa_block *blk,
                                  const mhsa_workspace *ws, const float *dy,
                                  const mhsa_grads *g)
{
    static const char fn[] = "mhsa_backward";
    mhsa_status st = mhsa__check_ws(fn, blk, ws);
    if (st != MHSA_OK)
        return st;
    if (!dy)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: dy is NULL", fn);
    if (!g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: g is NULL", fn);
    const mhsa_grads_impl *gi = (const mhsa_grads_impl *)g;
    if (gi->D != blk->D || gi->bias != blk->cfg.bias)
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

// The arguments for query block qb of head bh (rows qb*br ...).
static head_args block_args(const mhsa_block *blk, const mhsa_workspace *ws,
                            size_t br, size_t bh, size_t qb)
{
    size_t T = ws->fwd_t, H = blk->H, dh = blk->dh, D = blk->D;
    size_t b = bh / H, h = bh % H, r0 = qb * br;
    size_t row = b * T + r0;
    float *g0 = ws->qkv + b * T * 3 * D + h * dh;   // dqkv: dq of row 0
    head_args a = {
        .tq = T - r0 < br ? T - r0 : br, .tk = T, .dh = dh, .q_pos = r0,
        .causal = blk->cfg.causal,
        .mask = ws->fwd_mask ? ws->fwd_mask + r0 * T : NULL,
        .ldmask = T,
        .scale = 1.0f / sqrtf((float)dh),
        .q = ws->q + (bh * T + r0) * dh,
        .k = ws->k + bh * T * dh,
        .v = ws->v + bh * T * dh,
        .o = ws->ctx + row * D + h * dh, .ldo = D,
        .lse = ws->lse + bh * T + r0,
        .dout = ws->dctx + row * D + h * dh, .lddo = D,
        .dq = g0 + r0 * 3 * D,
        .dk = g0 + D, .dv = g0 + 2 * D,
        .ldg = 3 * D,
    };
    return a;
}

// dk and dv of head bh accumulate from zero.
static void zero_dkv(const mhsa_block *blk, const mhsa_workspace *ws,
                     size_t bh)
{
    size_t T = ws->fwd_t, H = blk->H, dh = blk->dh, D = blk->D;
    float *g0 = ws->qkv + (bh / H) * T * 3 * D + (bh % H) * dh;
    for (size_t t = 0; t < T; t++) {
        memset(g0 + t * 3 * D + D, 0, dh * sizeof(float));
        memset(g0 + t * 3 * D + 2 * D, 0, dh * sizeof(float));
    }
}

// One task per head when there are at least as many heads as threads.
// With fewer (one long sequence, one head), each head is split instead: a
// pass over (head, key tile) makes dk and dv, each tile visiting the query
// blocks in order, and a pass over (head, query block) makes dq, each block
// visiting the key tiles in order. Every sum runs in the order of the
// one-task version, so the bits are the same either way; the split pays
// for recomputing the scores twice.
static void attention_backward(const mhsa_kernels *k, mhsa_workspace *ws,
                               const mhsa_block *blk)
{
    size_t B = ws->fwd_b, T = ws->fwd_t, H = blk->H, dh = blk->dh;
    size_t br = mhsa__attn_br(k), bc = mhsa__attn_bc(k), bhs = B * H;
    size_t nqb = (T + br - 1) / br, ntile = (T + bc - 1) / bc;
    double flops = 8.0 * (double)B * (double)H * (double)T * (double)T *
                   (double)dh;
    int nt = mhsa__threads(ws, flops, bhs * nqb);
    int split = (size_t)nt > bhs;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
    mhsa_fpstate fp = mhsa__fp_enter();
    float *tiles = ws->tiles + (size_t)omp_get_thread_num() *
                               ws->tile_floats;
    if (!split) {
#pragma omp for schedule(static)
        for (size_t bh = 0; bh < bhs; bh++) {
            zero_dkv(blk, ws, bh);
            for (size_t qb = 0; qb < nqb; qb++) {
                head_args a = block_args(blk, ws, br, bh, qb);
                mhsa__head_backward(k, &a, tiles);
            }
        }
    } else {
#pragma omp for schedule(static)
        for (size_t bh = 0; bh < bhs; bh++)
            zero_dkv(blk, ws, bh);
#pragma omp for schedule(static)
        for (size_t task = 0; task < bhs * ntile; task++) {
            size_t bh = task / ntile, j0 = (task % ntile) * bc;
            for (size_t qb = 0; qb < nqb; qb++) {
                head_args a = block_args(blk, ws, br, bh, qb);
                a.skip_dq = 1;
                a.key0 = j0;
                a.key1 = j0 + bc;
                mhsa__head_backward(k, &a, tiles);
            }
        }
#pragma omp for schedule(static)
        for (size_t task = 0; task < bhs * nqb; task++) {
            head_args a = block_args(blk, ws, br, task / nqb, task % nqb);
            a.skip_dkv = 1;
            mhsa__head_backward(k, &a, tiles);
        }
    }
    mhsa__fp_leave(fp);
    }
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
    size_t D = blk->D, bt = ws->fwd_b * ws->fwd_t;
    const float *x = ws->fwd_x;

    // Output projection.
    if (blk->cfg.bias)
        add_colsum(bt, D, dy, D, g->b_out);
    mhsa_sgemm(k, s, 1, 0, D, D, bt, 1.0f, dy, D, ws->ctx, D, NULL, 1.0f,
               g->w_out, D);
    mhsa_sgemm(k, s, 0, 0, bt, D, D, 1.0f, dy, D, blk->w_out, D, NULL, 0.0f,
               ws->dctx, D);
    // Attention, into dqkv (B*T, 3D) = [dq | dk | dv] per row.
    attention_backward(k, ws, blk);
    // QKV projection.
    const float *dqkv = ws->qkv;
    if (blk->cfg.bias)
        add_colsum(bt, 3 * D, dqkv, 3 * D, g->b_qkv);
    mhsa_sgemm(k, s, 1, 0, 3 * D, D, bt, 1.0f, dqkv, 3 * D, x, D, NULL, 1.0f,
               g->w_qkv, D);
    if (dx)
        mhsa_sgemm(k, s, 0, 0, bt, D, 3 * D, 1.0f, dqkv, 3 * D, blk->w_qkv, D,
                   NULL, 0.0f, dx, D);
    mhsa__fp_leave(fp);
    return MHSA_OK;
}
