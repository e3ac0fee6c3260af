// backward.c — mhsa_backward: gradients of the last recorded forward.
//
// With ctx the merged attention output and qkv the projection:
//   db_out += colsum(dy);  dW_out += dy^T ctx;  dctx = dy W_out
//   dq, dk, dv per head from dctx (attention.c, FlashAttention-2 style)
//   db_qkv += colsum(dqkv); dW_qkv += dqkv^T x;  dx = dqkv W_qkv
// Every sum has one fixed order (GEMM K loop, rows in order for the bias
// sums, heads one per task), so the bits do not depend on the thread count.
#include <omp.h>
#include <string.h>

#include "objects.h"
#include "attn/attend.h"
#include "attn/attention.h"
#include "attn/view.h"
#include "core/fpenv.h"
#include "attn/split.h"
#include "core/threads.h"

enum { COLSUM_W = 32 };   // columns summed in registers at a time

// acc[c] += x[r*ld + c] for rows r in order, for the w <= COLSUM_W columns
// at x, acc. The running sums stay in a local array the compiler keeps in
// registers when w is the constant COLSUM_W: written as acc[c] += ... over
// whole rows, every add waited on the store of the row before (acc may
// alias x), and the bias sums of the tiny backward (96 x 96) were 4% of
// its time (perf, Zen 4). The same adds in the same order: the same bits.
static inline __attribute__((always_inline)) void
colsum_cols(size_t rows, size_t w, const float *x, size_t ld, float *acc)
{
    float s[COLSUM_W];
    for (size_t c = 0; c < w; c++)
        s[c] = acc[c];
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < w; c++)
            s[c] += x[r * ld + c];
    for (size_t c = 0; c < w; c++)
        acc[c] = s[c];
}

// acc[c] += sum over rows r of x[r*ld + c], rows in order: the table's
// vector kernel where it has one (the same adds: the same bits).
static void add_colsum(const mhsa_kernels *k, size_t rows, size_t cols,
                       const float *x, size_t ld, float *acc)
{
    if (k->colsum_add) {
        k->colsum_add(rows, cols, x, ld, acc);
        return;
    }
    size_t c0 = 0;
    for (; c0 + COLSUM_W <= cols; c0 += COLSUM_W)
        colsum_cols(rows, COLSUM_W, x + c0, ld, acc + c0);
    if (c0 < cols)
        colsum_cols(rows, cols - c0, x + c0, ld, acc + c0);
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

// The arguments for query block qb (rows qb*br ...) of head h of sequence
// b set in *a, with the gradients: dq of its rows, dk and dv those of its
// kv head, in dqkv (the projection buffer). Every other field of *a is
// left as it was (mhsa__view_block_set), so a loop zeroes it once.
static void block_args(const attn_view *view, const mhsa_block *blk,
                       const mhsa_workspace *ws, size_t br, size_t b,
                       size_t h, size_t qb, head_args *a)
{
    size_t T = ws->fwd_t, Hkv = blk->Hkv, dh = blk->dh;
    size_t D = blk->D, nqkv = blk->nqkv;
    size_t kvh = mhsa__view_group_head(view, h);
    size_t r0 = qb * br, row = b * T + r0;
    float *g0 = ws->qkv + b * T * nqkv;   // dqkv of the sequence's row 0
    mhsa__view_block_set(view, b, h, r0, br, a);
    a->dout = ws->dctx + row * D + h * dh;
    a->lddo = D;
    a->dq = g0 + r0 * nqkv + h * dh;
    a->dk = g0 + D + kvh * dh;
    a->dv = g0 + D + (Hkv + kvh) * dh;
    a->ldg = nqkv;
}

// dk and dv of kv head g of sequence b accumulate from zero.
static void zero_dkv(const mhsa_block *blk, const mhsa_workspace *ws,
                     size_t b, size_t g)
{
    size_t T = ws->fwd_t, dh = blk->dh, D = blk->D, nqkv = blk->nqkv;
    float *g0 = ws->qkv + b * T * nqkv + D + g * dh;
    for (size_t t = 0; t < T; t++) {
        memset(g0 + t * nqkv, 0, dh * sizeof(float));
        memset(g0 + t * nqkv + blk->Hkv * dh, 0, dh * sizeof(float));
    }
}

// The most heads mhsa__heads_backward takes at once.
enum { HEADS_AT_ONCE = 4 };

// The team's share of attention_backward (mhsa__team_run).
typedef struct bwd_ctx {
    const mhsa_kernels *k;
    mhsa_workspace *ws;
    const mhsa_block *blk;
    const attn_view *vw;
    int split;   // dk/dv and dq in separate passes (attention_backward)
    int zeroed;  // dqkv is +0 already: no task zeroes its rows
    int finite;  // q, k, v and dctx hold no inf or NaN: no block checks
} bwd_ctx;

static void bwd_body(void *p)
{
    const bwd_ctx *c = p;
    const mhsa_kernels *k = c->k;
    mhsa_workspace *ws = c->ws;
    const mhsa_block *blk = c->blk;
    const attn_view *vw = c->vw;
    size_t B = ws->fwd_b, T = ws->fwd_t, H = blk->H;
    size_t Hkv = blk->Hkv, group = blk->group;
    size_t br = mhsa__attn_br(k), bc = mhsa__attn_bc(k), kvs = B * Hkv;
    size_t nqb = (T + br - 1) / br, ntile = (T + bc - 1) / bc;
    int split = c->split;
    // Heads a task: several where each kv head has one query head and one
    // query block and the table has the fused kernel for several heads
    // (small_bwd.h), else one kv head (with its query heads) a task. Each
    // kv head's sums are its one head's either way: the same bits.
    size_t at_once = k->attn_small_heads_bwd && group == 1 && nqb == 1
                         ? HEADS_AT_ONCE
                         : 1;
    float *tiles = ws->attn.tiles + (size_t)omp_get_thread_num() *
                                    ws->attn.tile_floats;
    if (!split && at_once > 1) {
        // HEADS_AT_ONCE kv heads a task, each its one query head and
        // block (see at_once): the fused kernel takes their tiles at once.
        head_args a[HEADS_AT_ONCE];
        for (size_t hh = 0; hh < HEADS_AT_ONCE; hh++)
            a[hh] = (head_args){ .dq_zeroed = c->zeroed,
                                 .inputs_finite = c->finite };
        size_t per_seq = (Hkv + at_once - 1) / at_once;
#pragma omp for schedule(static)
        for (size_t task = 0; task < B * per_seq; task++) {
            size_t b = task / per_seq, g0 = task % per_seq * at_once;
            size_t nh = Hkv - g0 < at_once ? Hkv - g0 : at_once;
            for (size_t hh = 0; hh < nh; hh++) {
                if (!c->zeroed)
                    zero_dkv(blk, ws, b, g0 + hh);
                block_args(vw, blk, ws, br, b, g0 + hh, 0, &a[hh]);
            }
            mhsa__heads_backward(k, a, nh, tiles);
        }
    } else if (!split) {
        head_args a = { .dq_zeroed = c->zeroed,   // the rest stay 0
                        .inputs_finite = c->finite };
#pragma omp for schedule(static)
        for (size_t bg = 0; bg < kvs; bg++) {
            size_t b = bg / Hkv, g = bg % Hkv;
            if (!c->zeroed)
                zero_dkv(blk, ws, b, g);
            for (size_t h = g * group; h < (g + 1) * group; h++)
                for (size_t qb = 0; qb < nqb; qb++) {
                    block_args(vw, blk, ws, br, b, h, qb, &a);
                    mhsa__head_backward(k, &a, tiles);
                }
        }
    } else {
#pragma omp for schedule(static)
        for (size_t bg = 0; bg < kvs; bg++)
            zero_dkv(blk, ws, bg / Hkv, bg % Hkv);
        head_args dkv = { .skip_dq = 1, .inputs_finite = c->finite };
#pragma omp for schedule(static)
        for (size_t task = 0; task < kvs * ntile; task++) {
            size_t bg = task / ntile, j0 = (task % ntile) * bc;
            size_t b = bg / Hkv, g = bg % Hkv;
            dkv.key0 = j0;
            dkv.key1 = j0 + bc;
            for (size_t h = g * group; h < (g + 1) * group; h++)
                for (size_t qb = 0; qb < nqb; qb++) {
                    block_args(vw, blk, ws, br, b, h, qb, &dkv);
                    mhsa__head_backward(k, &dkv, tiles);
                }
        }
        head_args dq = { .skip_dkv = 1, .inputs_finite = c->finite };
#pragma omp for schedule(static)
        for (size_t task = 0; task < B * H * nqb; task++) {
            size_t bh = task / nqb;
            block_args(vw, blk, ws, br, bh / H, bh % H, task % nqb, &dq);
            mhsa__head_backward(k, &dq, tiles);
        }
    }
}

// One task per kv head when there are at least as many kv heads as
// threads: its query heads in order, each over its query blocks in order,
// so dk and dv sum the group's contributions in a fixed order. With fewer
// (one long sequence, few heads), each kv head is split instead: a pass
// over (kv head, key tile) makes dk and dv, each tile visiting the group's
// heads and query blocks in order, and a pass over (head, query block)
// makes dq, each block visiting the key tiles in order. Every sum runs in
// the order of the one-task version, so the bits are the same either way;
// the split pays for recomputing the scores twice.
static void attention_backward(const mhsa_kernels *k, mhsa_workspace *ws,
                               const mhsa_block *blk)
{
    size_t B = ws->fwd_b, T = ws->fwd_t, H = blk->H, dh = blk->dh;
    size_t br = mhsa__attn_br(k), kvs = B * blk->Hkv;
    size_t nqb = (T + br - 1) / br;
    attn_job job = recorded_job(blk, ws);
    attn_view view = mhsa__attn_view(&job, ws->attn.seqs);
    double flops = 0.0;   // the pairs rows see (causal: half of T x T)
    for (size_t b = 0; b < B; b++)
        flops += 8.0 * (double)H * mhsa__view_pairs(&view, b) * (double)dh;
    int nt = mhsa__threads(ws->max_threads, flops, B * H * nqb);
    int split = (size_t)nt > kvs;
    // On one thread dqkv is zeroed in one memset: a tiny block's tasks
    // zeroed it as ~1150 rows of 8 floats, a call each. (On a team the
    // tasks zero their own rows, in parallel.) Zeros either way, then the
    // same sums: the same bits.
    int zeroed = nt <= 1;
    if (zeroed)
        memset(ws->qkv, 0, B * T * blk->nqkv * sizeof(float));
    // Likewise the blocks' finiteness checks (q, k, v and dO rows, four
    // calls a block: 3% of the tiny forward+backward) become one pass over
    // the call's buffers on one thread. Only a shortcut: when it finds a
    // non-finite value the blocks check their own rows as before. (A team
    // keeps the per-block checks, which run in parallel.)
    size_t nd = B * T * blk->D;   // dctx: the heads' dO
    int finite = nt <= 1 && mhsa__attn_inputs_finite(k, &job) &&
                 k->rows_finite(1, nd, ws->dctx, nd);
    bwd_ctx c = { k, ws, blk, &view, split, zeroed, finite };
    mhsa__team_run(nt, bwd_body, &c);
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
    attention_backward(k, ws, blk);
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
