// view.c — the view of an attention call (view.h).
#include <math.h>

#include "view.h"

static attn_seq seq_of(const attn_job *j, size_t b)
{
    attn_seq v = { j->tq, j->q_pos, j->tk, 0, 0, 0 };
    if (j->kv_len) {
        v.q_pos = j->kv_len[b];
        v.rows = j->n_new ? (size_t)j->n_new[b] : j->tq;
        v.tk = v.q_pos + v.rows;
    }
    // Padding only counts when it hides a stored key: seq_len[b] = T is
    // the unpadded sequence, on the same path with the same bits.
    if (j->seq_len && (size_t)j->seq_len[b] < v.tk)
        v.klen = (size_t)j->seq_len[b];
    v.lo = mhsa_window_first(v.q_pos, j->window);
    v.decodes = v.rows == 1 && !j->mask && !j->attn && !v.klen &&
                j->compute == MHSA_F32 &&
                (!j->causal || v.q_pos + 1 >= v.tk);
    return v;
}

attn_view mhsa__attn_view(const attn_job *j, attn_seq *seqs)
{
    for (size_t b = 0; b < j->batch; b++)
        seqs[b] = seq_of(j, b);
    size_t row = j->dh * mhsa_dtype_size(j->kv_dtype), group = j->H / j->Hkv;
    int shift = group && !(group & (group - 1))
                    ? __builtin_ctzll((unsigned long long)group)
                    : -1;   // log2 of a power of two
    attn_view v = { j, seqs, row, j->kv_t * row, group,
                    1.0f / sqrtf((float)j->dh), shift };
    return v;
}

double mhsa__view_pairs(const attn_view *view, size_t b)
{
    const attn_job *j = view->job;
    const attn_seq *v = &view->seq[b];
    size_t kend = v->klen && v->klen < v->tk ? v->klen : v->tk;
    if (!j->window) {
        // The loop below in closed form: rows before `first` see q_pos + r
        // + 1 keys (causal), the rest kend. Integers, exact in a double
        // up to 2^53 as the loop's sums are.
        size_t first = 0;
        if (j->causal && kend > v->q_pos + 1)
            first = kend - v->q_pos - 1 < v->rows ? kend - v->q_pos - 1
                                                  : v->rows;
        double f = (double)first;
        return f * (double)(v->q_pos + 1) + f * (f - 1.0) / 2.0 +
               (double)(v->rows - first) * (double)kend;
    }
    double pairs = 0.0;
    for (size_t r = 0; r < v->rows; r++) {
        size_t p = v->q_pos + r;
        size_t hi = j->causal && p + 1 < kend ? p + 1 : kend;
        size_t lo = mhsa_window_first(p, j->window);
        pairs += hi > lo ? (double)(hi - lo) : 0.0;
    }
    return pairs;
}

void mhsa__view_block_set(const attn_view *view, size_t b, size_t h,
                          size_t r0, size_t br, head_args *a)
{
    const attn_job *j = view->job;
    const attn_seq *v = &view->seq[b];
    size_t dh = j->dh, bh = b * j->H + h, kvh = mhsa__view_kv_head(view, b, h);
    size_t tq = v->rows - r0 < br ? v->rows - r0 : br;
    const char *k = mhsa__view_k(view, kvh), *vv = mhsa__view_v(view, kvh);
    a->tq = tq;
    a->tk = v->tk;
    a->dh = dh;
    a->q_pos = v->q_pos + r0;
    a->causal = j->causal;
    a->window = j->window;
    a->klen = v->klen;
    a->mask = j->mask ? j->mask + r0 * j->tk : NULL;
    a->ldmask = j->tk;
    a->scale = view->scale;
    a->ldqkv = j->ldqkv;
    if (j->ldqkv) {   // in place in the projection's rows
        size_t ld = j->ldqkv, g = mhsa__view_group_head(view, h) * dh;
        size_t kv0 = b * j->kv_t * ld + g;
        a->q = j->q + (b * j->tq + r0) * ld + h * dh;
        k = (const char *)((const float *)j->k + kv0);
        vv = (const char *)((const float *)j->v + kv0);
    } else {
        a->q = j->q + (bh * j->tq + r0) * dh;
    }
    a->k = (const float *)k;
    a->v = (const float *)vv;
    a->k16 = k;
    a->v16 = vv;
    a->kv_dtype = j->kv_dtype;
    a->o = j->ctx + (b * j->tq + r0) * j->H * dh + h * dh;
    a->ldo = j->H * dh;
    a->lse = j->lse ? j->lse + bh * j->tq + r0 : NULL;
    a->lsum = j->lse && j->lsum ? j->lsum + bh * j->tq + r0 : NULL;
    a->attn = j->attn ? j->attn + (bh * j->tq + r0) * j->tk : NULL;
    a->ldattn = j->tk;
    a->compute = j->compute;
}
