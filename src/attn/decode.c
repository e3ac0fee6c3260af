// decode.c — attention for sequences with one query row that sees every
// stored key (decoding one token with the KV cache, or a forward with T =
// 1), but those before a sliding window.
//
// A GEMM tile would waste mr - 1 rows and packing would double the memory
// traffic, so K and V are streamed once, unpacked and in their stored type,
// by the kv kernels: for the `group` query heads that share a kv head, s =
// K q (one K read for the whole group), the online-softmax step on each
// head's scores, o += s V (one V read). The keys are split into fixed
// chunks (fixed by the sequence alone, independent of the thread count and
// of the rest of the batch); tasks are (sequence, kv head, chunk), so one
// long sequence does not leave a thread idle, and each leaves a partial
// (m, l, o) per query head; the partials merge in chunk order.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "decode.h"
#include "core/threads.h"
#include "kernels/log_f32.h"

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

// A score of +-inf made from a query or key holding inf or NaN is not a
// score that overflowed (kernels.h): what a row reads propagates, so such
// scores become NaN. (A key holding inf gives +-inf or NaN, never a finite
// score.) Only looked at when an infinite score shows up: a finite cache
// costs nothing here. One query row q (dh) against the n keys at kc.
static void nanify_inf(const mhsa_kernels *k, const attn_view *v,
                       const float *q, const char *kc, size_t n, float *s,
                       float *row)
{
    size_t dh = v->job->dh;
    for (size_t c = 0; c < n; c++) {
        if (!isinf(s[c]))
            continue;
        k->cvt_to_f32(dh, kc + c * v->kv_row_bytes, v->job->kv_dtype, row);
        if (!all_finite(row, dh) || !all_finite(q, dh))
            s[c] = NAN;
    }
}

// One task: keys [j0, j0 + n) of kv head g of sequence b, for the group's
// query heads; partials (m, l, o[dh]) of those heads, contiguous, at part.
static void decode_chunk(const mhsa_kernels *k, const attn_view *v,
                         size_t b, size_t g, size_t j0, size_t n,
                         float *part, float *s)
{
    const attn_job *j = v->job;
    size_t dh = j->dh, group = j->H / j->Hkv, stride = dh + 2;
    size_t h0 = g * group;
    const float *q = j->q + (b * j->H + h0) * j->tq * dh;
    size_t ldq = j->tq * dh, kvh = b * j->Hkv + g;
    const char *kc = mhsa__view_k(v, kvh) + j0 * v->kv_row_bytes;
    const char *vc = mhsa__view_v(v, kvh) + j0 * v->kv_row_bytes;
    k->kv_dot(group, n, dh, q, ldq, kc, dh, j->kv_dtype, s, n);
    for (size_t r = 0; r < group; r++) {
        float *pr = part + r * stride;   // m, l, o[dh]
        float *sr = s + r * n;
        for (size_t c = 0; c < n; c++)
            if (isinf(sr[c])) {   // o (dh floats) serves as scratch
                nanify_inf(k, v, q + r * ldq, kc, n, sr, pr + 2);
                break;
            }
        pr[0] = -INFINITY;
        pr[1] = 0.0f;
        memset(pr + 2, 0, dh * sizeof(float));
        mhsa_softmax_args sa = { 1, n, sr, n, { NULL, 0, 0, 0, 0, 0, 0 },
                                 pr, pr + 1, pr + 2, dh, dh };
        k->softmax_online(&sa);
    }
    k->kv_acc(group, n, dh, s, n, vc, dh, j->kv_dtype, part + 2, stride);
}

// Merges the partials of one (sequence, query head) in chunk order into
// its context row o (dh) and lse.
static void merge(size_t nch, size_t dh, size_t step, const float *p0,
                  float *o, float *lse)
{
    float mx = -INFINITY, l = 0.0f;
    for (size_t c = 0; c < nch; c++)
        if (p0[c * step] > mx)
            mx = p0[c * step];
    memset(o, 0, dh * sizeof(float));
    if (mx == -INFINITY) {   // no finite score anywhere
        // An unblocked NaN score leaves its chunk l = NaN (see the
        // softmax contract): the row is NaN, not a silent zero.
        float lsum = 0.0f;
        for (size_t c = 0; c < nch; c++)
            lsum += p0[c * step + 1];
        if (lsum != lsum)
            for (size_t d = 0; d < dh; d++)
                o[d] = lsum;
        if (lse)
            *lse = lsum != lsum ? lsum : -INFINITY;
        return;
    }
    for (size_t c = 0; c < nch; c++) {
        const float *p = p0 + c * step;
        // With a +inf max only the chunks whose max is +inf count (their l
        // counts their +inf keys); exp(inf - inf) would be NaN.
        float w = mx == INFINITY ? (p[0] == INFINITY ? 1.0f : 0.0f)
                                 : expf(p[0] - mx);
        l += w * p[1];
        for (size_t d = 0; d < dh; d++)
            o[d] += w * p[2 + d];
    }
    float inv = 1.0f / l;
    for (size_t d = 0; d < dh; d++)
        o[d] *= inv;
    if (lse)
        *lse = mx + mhsa_log_f32(l);
}

size_t mhsa__decode_plan(const attn_scratch *s, const attn_view *view,
                         double *flops)
{
    const attn_job *j = view->job;
    // Task table: first[b] = the first task of sequence b, chunks of kv
    // head g at first[b] + g * nch(b); partials at task * group * stride.
    size_t *first = s->plan, tasks = 0;
    double f = 0.0;
    for (size_t b = 0; b < j->batch; b++) {
        first[b] = tasks;
        const attn_seq *v = &view->seq[b];
        if (!v->decodes)
            continue;
        tasks += j->Hkv * mhsa__decode_chunks(v->lo, v->tk);
        f += 4.0 * (double)j->H * (double)(v->tk - v->lo) * (double)j->dh;
    }
    first[j->batch] = tasks;
    *flops = f;
    return tasks;
}

void mhsa__decode_team(const mhsa_kernels *k, const attn_scratch *s,
                       const attn_view *view)
{
    const attn_job *j = view->job;
    size_t dh = j->dh, group = j->H / j->Hkv, stride = dh + 2;
    const size_t *first = s->plan;
    size_t tasks = first[j->batch];
    float *sc = s->tiles + (size_t)omp_get_thread_num() * s->tile_floats;
    size_t b = 0;
#pragma omp for schedule(static)
    for (size_t task = 0; task < tasks; task++) {
        while (first[b + 1] <= task)   // tasks ascend in each thread
            b++;
        // The keys the row sees, [lo, tk), in nch chunks per kv head.
        size_t lo = view->seq[b].lo, hi = view->seq[b].tk;
        size_t nch = (first[b + 1] - first[b]) / j->Hkv;
        size_t g = (task - first[b]) / nch, c = (task - first[b]) % nch;
        size_t j0 = lo + c * MHSA_DECODE_CHUNK;
        size_t n = hi - j0 < MHSA_DECODE_CHUNK ? hi - j0 : MHSA_DECODE_CHUNK;
        decode_chunk(k, view, b, g, j0, n, s->decode + task * group * stride,
                     sc);
    }   // the implied barrier: every partial is made before it is merged
    // Merge: one (sequence, query head) per task, chunk order.
#pragma omp for schedule(static)
    for (size_t bh = 0; bh < j->batch * j->H; bh++) {
        size_t bb = bh / j->H, h = bh % j->H;
        if (first[bb + 1] == first[bb])   // not a decode sequence
            continue;
        size_t nch = (first[bb + 1] - first[bb]) / j->Hkv;
        size_t g = h / group, r = h % group;
        const float *p0 = s->decode +
                          ((first[bb] + g * nch) * group + r) * stride;
        merge(nch, dh, group * stride, p0,
              j->ctx + bb * j->tq * j->H * dh + h * dh,
              j->lse ? j->lse + bh * j->tq : NULL);
    }
}

typedef struct decode_ctx {
    const mhsa_kernels *k;
    const attn_scratch *s;
    const attn_view *view;
} decode_ctx;

static void decode_body(void *p)
{
    const decode_ctx *c = p;
    mhsa__decode_team(c->k, c->s, c->view);
}

void mhsa__attention_decode(const mhsa_kernels *k, const attn_scratch *s,
                            const attn_view *view)
{
    double flops;
    size_t tasks = mhsa__decode_plan(s, view, &flops);
    decode_ctx c = { k, s, view };
    mhsa__team_run(mhsa__threads(s->max_threads, flops, tasks), decode_body,
                   &c);
}
