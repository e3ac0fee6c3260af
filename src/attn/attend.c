// attend.c — the attention loop over (sequence, head, query block) for the
// sequences that do not decode one row (those go to decode.c).
//
// Tasks are handed out statically by index from a table of per-sequence
// prefix sums (ragged batches have different rows per sequence), so which
// thread runs a task never changes its arithmetic. Each task is one query
// block of one head (attention.c); a head reads the K/V of its kv head.
#include <math.h>
#include <omp.h>

#include "attend.h"
#include "attention.h"
#include "core/threads.h"
#include "decode.h"
#include "small_view.h"

// Where one kv head's packed K^T and V tiles go, when they are packed
// once for all its query blocks (see mhsa__attention).
typedef struct prepack {
    int on;
    size_t kpf, per_head, ntiles;   // for tk_max keys
    float *base;                    // (batch * Hkv) heads of per_head
    float *vbad, *kbad;             // (batch * Hkv, ntiles) each
} prepack;

static size_t seq_blocks(const attn_seq *v, size_t br)
{
    return (v->rows + br - 1) / br;
}

void mhsa__attn_finish_lse(const mhsa_kernels *k, size_t rows, float *lse,
                           const float *lsum)
{
    k->lse_add_log(rows, lse, lsum);
}

// The team's share of one call (mhsa__team_run): the kv heads' tiles
// packed up front when pp->on, then the tasks.
typedef struct attend_ctx {
    const mhsa_kernels *k;
    const attn_scratch *s;
    const attn_job *j;
    const attn_view *view;
    const prepack *pp;
    const size_t *first;   // the task table (mhsa__attention)
    size_t tasks, heads;
    int finite;            // head_args.inputs_finite for every block
    int *declined;         // set when an in-place block was declined
} attend_ctx;

// The heads attn_small_heads takes at once (kernels.h).
enum { HEADS_AT_ONCE = 4 };

// attend_body's tasks when q, k and v are read in place (attn_job.ldqkv,
// so no sequence decodes and each head is one block): the fused small
// views or nothing, a task per HEADS_AT_ONCE heads of a sequence where the
// table has the kernel for several heads at once (the same bits either
// way, so the task split does not change them).
static void in_place_body(const attend_ctx *c)
{
    const mhsa_kernels *k = c->k;
    const attn_job *j = c->j;
    const attn_view *view = c->view;
    size_t per = k->attn_small_heads ? HEADS_AT_ONCE : 1;
    size_t groups = (j->H + per - 1) / per, br = mhsa__attn_br(k);
    head_args a = { 0 };
#pragma omp for schedule(static)
    for (size_t t = 0; t < j->batch * groups; t++) {
        size_t b = t / groups, h0 = t % groups * per;
        size_t nh = j->H - h0 < per ? j->H - h0 : per;
        mhsa__view_block_set(view, b, h0, 0, br, &a);
        // The heads' K and V: their kv heads' columns, dh apart.
        const float *kh[HEADS_AT_ONCE], *vh[HEADS_AT_ONCE];
        size_t g0 = mhsa__view_group_head(view, h0);
        for (size_t hh = 0; per > 1 && hh < nh; hh++) {
            size_t off = (mhsa__view_group_head(view, h0 + hh) - g0) * j->dh;
            kh[hh] = a.k + off;
            vh[hh] = a.v + off;
        }
        if (per > 1 && nh >= 2 &&
            mhsa__heads_forward_small(k, &a, nh, kh, vh))
            continue;
        for (size_t hh = 0; hh < nh; hh++) {
            if (hh)
                mhsa__view_block_set(view, b, h0 + hh, 0, br, &a);
            if (!mhsa__head_forward_small(k, &a)) {
#pragma omp atomic write
                *c->declined = 1;
            }
        }
    }
}

static void attend_body(void *p)
{
    const attend_ctx *c = p;
    if (c->j->ldqkv) {
        in_place_body(c);
        return;
    }
    const mhsa_kernels *k = c->k;
    const attn_scratch *s = c->s;
    const attn_job *j = c->j;
    const attn_view *view = c->view;
    const prepack *pp = c->pp;
    const size_t *first = c->first;
    size_t tasks = c->tasks, heads = c->heads;
    size_t br = mhsa__attn_br(k), bc = mhsa__attn_bc(k), dh = j->dh;
    float *tiles = s->tiles + (size_t)omp_get_thread_num() * s->tile_floats;
    if (pp->on) {
#pragma omp for schedule(static)
        for (size_t pt = 0; pt < heads * pp->ntiles; pt++) {
            size_t hd = pt / pp->ntiles, tile = pt % pp->ntiles;
            // Tiles wholly before the first key any row sees are never
            // read (head_forward starts each block at its own first row's
            // tile), so they are not packed either: a chunk of a long
            // prefill under a window packs its window, not the history.
            const attn_seq *v = &view->seq[hd / j->Hkv];
            if (v->decodes || tile * bc >= v->tk || (tile + 1) * bc <= v->lo)
                continue;
            const char *kd = mhsa__view_k(view, hd);
            const char *vd = mhsa__view_v(view, hd);
            float *kp = pp->base + hd * pp->per_head;
            mhsa__head_pack_kv(k, v->tk, dh, tile, kd, vd, j->kv_dtype,
                               j->compute, kp, kp + pp->kpf, tiles,
                               pp->vbad + pt, pp->kbad + pt);
        }   // the implied barrier: every head is packed before it is used
    }
    size_t b = 0;
    // The fields view_block_set leaves stay as set here.
    head_args a = { .inputs_finite = c->finite };
#pragma omp for schedule(static)
    for (size_t task = 0; task < tasks; task++) {
        while (first[b + 1] <= task)   // tasks ascend in each thread
            b++;
        size_t nqb = seq_blocks(&view->seq[b], br), t = task - first[b];
        // one block a head (short sequences): no division
        size_t h = nqb == 1 ? t : t / nqb, qb = nqb == 1 ? 0 : t % nqb;
        mhsa__view_block_set(view, b, h, qb * br, br, &a);
        if (pp->on) {
            size_t hd = mhsa__view_kv_head(view, b, h);
            a.kpack = pp->base + hd * pp->per_head;
            a.vpack = a.kpack + pp->kpf;
            a.vbad = pp->vbad + hd * pp->ntiles;
            a.kbad = pp->kbad + hd * pp->ntiles;
        }
        mhsa__head_forward(k, &a, tiles);
        if (a.attn)
            mhsa__head_weights(k, &a, tiles);
    }
}

int mhsa__attn_inputs_finite(const mhsa_kernels *k, const attn_job *j)
{
    size_t nq = j->batch * j->H * j->tq * j->dh;
    size_t nkv = j->batch * j->Hkv * j->kv_t * j->dh;
    return k->rows_finite(1, nq, j->q, nq) &&
           k->rows_finite(1, nkv, (const float *)j->k, nkv) &&
           k->rows_finite(1, nkv, (const float *)j->v, nkv);
}

int mhsa__attention(const mhsa_kernels *k, const attn_scratch *s,
                    const attn_job *j)
{
    size_t br = mhsa__attn_br(k), bc = mhsa__attn_bc(k), dh = j->dh;
    attn_view view = mhsa__attn_view(j, s->seqs);
    // Task table: tiled tasks of sequence b are [first[b], first[b + 1]),
    // head-major: task first[b] + h * nqb(b) + qb.
    size_t *first = s->plan + j->batch + 1;
    size_t tasks = 0, tk_max = 0, n_decode = 0, nqb_max = 0;
    double flops = 0.0;
    for (size_t b = 0; b < j->batch; b++) {
        first[b] = tasks;
        const attn_seq *v = &view.seq[b];
        if (v->decodes) {
            n_decode++;
            continue;
        }
        size_t nqb = seq_blocks(v, br);
        tasks += j->H * nqb;
        flops += 4.0 * (double)j->H * mhsa__view_pairs(&view, b) *
                 (double)dh;
        tk_max = v->tk > tk_max ? v->tk : tk_max;
        nqb_max = nqb > nqb_max ? nqb : nqb_max;
    }
    first[j->batch] = tasks;
    if (n_decode) {
        mhsa__attention_decode(k, s, &view);
        // Decode writes the log-sum-exp itself: lse + log(1) = lse (an
        // lse is never -0, so adding +0 keeps its bits).
        for (size_t b = 0; j->lse && j->lsum && b < j->batch; b++)
            for (size_t h = 0; view.seq[b].decodes && h < j->H; h++)
                j->lsum[(b * j->H + h) * j->tq] = 1.0f;
    }
    if (!tasks)
        return 1;
    int nt = mhsa__threads(s->max_threads, flops, tasks);
    // With several query blocks per head, each kv head's K^T and V tiles
    // are packed once up front instead of once per block (at T = 512 a K
    // tile was packed four times on average), only when they fit.
    prepack pp = { 0 };
    pp.kpf = mhsa__head_kpack_floats(k, tk_max, dh);
    pp.per_head = pp.kpf + mhsa__head_vpack_floats(k, tk_max, dh);
    pp.ntiles = (tk_max + bc - 1) / bc;
    size_t heads = j->batch * j->Hkv;
    pp.on = nqb_max >= 2 && !j->attn && !j->ldqkv &&
            heads * (pp.per_head + 2 * pp.ntiles) <= s->pack_floats;
    pp.base = s->pack;
    pp.vbad = s->pack + heads * pp.per_head;
    pp.kbad = pp.vbad + heads * pp.ntiles;
    // On one thread, one finiteness pass over the call's q, k and v
    // replaces each block's checks of its rows (q, K and V tiles, a part
    // of the GPT block's forward in perf) when it finds no inf or NaN; else
    // the blocks check their own as before, so the same paths and bits.
    // Only where every row of the buffers is this call's (no cache) and
    // fp32, and not for blocks the fused small view takes (it checks in
    // registers; the pass only added instructions to the tiny forward).
    // The figures: docs/performance.md, "Measurements behind the code".
    int small = k->attn_small && j->tq <= MHSA_SMALL_VIEW_ROWS;
    int finite = nt <= 1 && !small && !j->ldqkv &&
                 j->kv_dtype == MHSA_F32 && !j->kv_len && !j->n_new &&
                 mhsa__attn_inputs_finite(k, j);
    int declined = 0;
    attend_ctx c = { k,     s,     j,     &view,  &pp,
                     first, tasks, heads, finite, &declined };
    mhsa__team_run(nt, attend_body, &c);
    return !declined;
}
