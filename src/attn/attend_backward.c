// attend_backward.c — the attention backward's driver (attend_backward.h):
// which tasks run which heads' blocks, with what arguments, on how many
// threads. The blocks themselves are attention.c's (mhsa__head_backward,
// mhsa__heads_backward).
//
// One task per kv head when there are at least as many kv heads as
// threads: its query heads in order, each over its query blocks in order,
// so dk and dv sum the group's contributions in a fixed order. With fewer
// (one long sequence, few heads), each kv head is split instead: a pass
// over (kv head, key tile) makes dk and dv, each tile visiting the group's
// heads and query blocks in order, and a pass over (head, query block)
// makes dq, each block visiting the key tiles in order. Every sum runs in
// the order of the one-task version, so the bits are the same either way;
// the split pays for recomputing the scores twice.
#include <omp.h>
#include <string.h>

#include "attend.h"
#include "attend_backward.h"
#include "attention.h"
#include "core/threads.h"

// The most heads mhsa__heads_backward takes at once.
enum { HEADS_AT_ONCE = 4 };

// The arguments for query block qb (rows qb*br ...) of head h of sequence
// b set in *a, with the gradients: dq of its rows, dk and dv those of its
// kv head. Every other field of *a is left as it was
// (mhsa__view_block_set), so a loop zeroes it once.
static void block_args(const attn_view *view, const attn_job *j,
                       const attn_grads *g, size_t br, size_t b, size_t h,
                       size_t qb, head_args *a)
{
    size_t T = j->tq, Hkv = j->Hkv, dh = j->dh, D = j->H * dh;
    size_t kvh = mhsa__view_group_head(view, h);
    size_t r0 = qb * br, row = b * T + r0;
    float *g0 = g->dqkv + b * T * g->ld;   // the sequence's row 0
    mhsa__view_block_set(view, b, h, r0, br, a);
    a->dout = g->dout + row * g->lddo + h * dh;
    a->lddo = g->lddo;
    a->dq = g0 + r0 * g->ld + h * dh;
    a->dk = g0 + D + kvh * dh;
    a->dv = g0 + D + (Hkv + kvh) * dh;
    a->ldg = g->ld;
}

// dk and dv of kv head kvh of sequence b accumulate from zero.
static void zero_dkv(const attn_job *j, const attn_grads *g, size_t b,
                     size_t kvh)
{
    size_t T = j->tq, dh = j->dh;
    float *g0 = g->dqkv + b * T * g->ld + j->H * dh + kvh * dh;
    for (size_t t = 0; t < T; t++) {
        memset(g0 + t * g->ld, 0, dh * sizeof(float));
        memset(g0 + t * g->ld + j->Hkv * dh, 0, dh * sizeof(float));
    }
}

// The team's share of mhsa__attention_backward (mhsa__team_run).
typedef struct bwd_ctx {
    const mhsa_kernels *k;
    const attn_scratch *s;
    const attn_job *j;
    const attn_grads *g;
    const attn_view *vw;
    int split;   // dk/dv and dq in separate passes (see the top)
    int zeroed;  // dqkv is +0 already: no task zeroes its rows
    int finite;  // q, k, v and dO hold no inf or NaN: no block checks
} bwd_ctx;

static void bwd_body(void *p)
{
    const bwd_ctx *c = p;
    const mhsa_kernels *k = c->k;
    const attn_job *j = c->j;
    const attn_grads *gr = c->g;
    const attn_view *vw = c->vw;
    size_t B = j->batch, T = j->tq, H = j->H;
    size_t Hkv = j->Hkv, group = H / Hkv;
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
    float *tiles = c->s->tiles + (size_t)omp_get_thread_num() *
                                 c->s->tile_floats;
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
                    zero_dkv(j, gr, b, g0 + hh);
                block_args(vw, j, gr, br, b, g0 + hh, 0, &a[hh]);
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
                zero_dkv(j, gr, b, g);
            for (size_t h = g * group; h < (g + 1) * group; h++)
                for (size_t qb = 0; qb < nqb; qb++) {
                    block_args(vw, j, gr, br, b, h, qb, &a);
                    mhsa__head_backward(k, &a, tiles);
                }
        }
    } else {
#pragma omp for schedule(static)
        for (size_t bg = 0; bg < kvs; bg++)
            zero_dkv(j, gr, bg / Hkv, bg % Hkv);
        head_args dkv = { .skip_dq = 1, .inputs_finite = c->finite };
#pragma omp for schedule(static)
        for (size_t task = 0; task < kvs * ntile; task++) {
            size_t bg = task / ntile, j0 = (task % ntile) * bc;
            size_t b = bg / Hkv, g = bg % Hkv;
            dkv.key0 = j0;
            dkv.key1 = j0 + bc;
            for (size_t h = g * group; h < (g + 1) * group; h++)
                for (size_t qb = 0; qb < nqb; qb++) {
                    block_args(vw, j, gr, br, b, h, qb, &dkv);
                    mhsa__head_backward(k, &dkv, tiles);
                }
        }
        head_args dq = { .skip_dkv = 1, .inputs_finite = c->finite };
#pragma omp for schedule(static)
        for (size_t task = 0; task < B * H * nqb; task++) {
            size_t bh = task / nqb;
            block_args(vw, j, gr, br, bh / H, bh % H, task % nqb, &dq);
            mhsa__head_backward(k, &dq, tiles);
        }
    }
}

void mhsa__attention_backward(const mhsa_kernels *k, const attn_scratch *s,
                              const attn_job *j, const attn_grads *g)
{
    size_t B = j->batch, T = j->tq, H = j->H, dh = j->dh;
    size_t br = mhsa__attn_br(k), kvs = B * j->Hkv;
    size_t nqb = (T + br - 1) / br, width = (H + 2 * j->Hkv) * dh;
    attn_view view = mhsa__attn_view(j, s->seqs);
    double flops = 0.0;   // the pairs rows see (causal: half of T x T)
    for (size_t b = 0; b < B; b++)
        flops += 8.0 * (double)H * mhsa__view_pairs(&view, b) * (double)dh;
    int nt = mhsa__threads(s->max_threads, flops, B * H * nqb);
    int split = (size_t)nt > kvs;
    // On one thread dqkv is zeroed in one memset: a tiny block's tasks
    // zeroed it as ~1150 rows of 8 floats, a call each. (On a team the
    // tasks zero their own rows, in parallel.) Zeros either way, then the
    // same sums: the same bits.
    int zeroed = nt <= 1;
    if (zeroed && g->ld == width)
        memset(g->dqkv, 0, B * T * width * sizeof(float));
    else if (zeroed)
        for (size_t r = 0; r < B * T; r++)
            memset(g->dqkv + r * g->ld, 0, width * sizeof(float));
    // Likewise the blocks' finiteness checks (q, k, v and dO rows, four
    // calls a block, a visible part of the tiny forward+backward:
    // docs/performance.md, "Measurements behind the code") become one pass
    // over the call's buffers on one thread. Only a shortcut: when it finds
    // a non-finite value the blocks check their own rows as before. (A team
    // keeps the per-block checks, which run in parallel.)
    int finite = nt <= 1 && mhsa__attn_inputs_finite(k, j) &&
                 k->rows_finite(B * T, H * dh, g->dout, g->lddo);
    bwd_ctx c = { k, s, j, g, &view, split, zeroed, finite };
    mhsa__team_run(nt, bwd_body, &c);
}
