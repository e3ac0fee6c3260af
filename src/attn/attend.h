// attend.h — one attention call over every (sequence, head): the
// description that forward, the cached calls and decode share, and the
// drivers that run it.
//
// What a query row sees is answered in one place (DESIGN-0.2 §1): per
// sequence b, a seq_view gives its query rows, the position of row 0, the
// keys stored and the padding; with the job's causal flag, window and mask
// that is the mask view of kernels.h. Query head h reads kv head h / group.
#ifndef MHSA_ATTEND_H
#define MHSA_ATTEND_H

#include "api/objects.h"

typedef struct attn_job {
    size_t batch, H, Hkv, dh;
    size_t tq;               // query rows per sequence in q, ctx, lse, attn
    size_t kv_t;             // rows per (sequence, kv head) of k and v
    int causal;
    size_t window;           // 0 or W
    const float *mask;       // (tq, tk) additive, or NULL
    // Uniform sequences: row 0 at position q_pos, keys 0 .. tk-1 stored.
    size_t q_pos, tk;
    // Or per sequence (each NULL when unused):
    const int *seq_len;      // key padding: keys >= seq_len[b] blocked
    const size_t *kv_len;    // cached: positions before this call's rows
    const int *n_new;        // cached: rows of sequence b (the rest unused)
    const float *q;          // (batch, H, tq, dh), pre-scaled
    const void *k, *v;       // (batch, Hkv, kv_t, dh) stored as kv_dtype
    mhsa_dtype kv_dtype;
    float *ctx;              // (batch, tq, H*dh) merged output
    float *lse;              // (batch, H, tq) or NULL
    float *attn;             // (batch, H, tq, tk) or NULL
} attn_job;

// What the query rows of sequence b see.
typedef struct seq_view {
    size_t rows;    // query rows computed (rows past them are not)
    size_t q_pos;   // absolute position of row 0
    size_t tk;      // keys stored: positions 0 .. tk-1
    size_t klen;    // 0, or keys >= klen are padding
} seq_view;

static inline seq_view mhsa__seq_view(const attn_job *j, size_t b)
{
    seq_view v = { j->tq, j->q_pos, j->tk, 0 };
    if (j->kv_len) {
        v.q_pos = j->kv_len[b];
        v.rows = j->n_new ? (size_t)j->n_new[b] : j->tq;
        v.tk = v.q_pos + v.rows;
    }
    // Padding only counts when it hides a stored key: seq_len[b] = T is
    // the unpadded sequence, on the same path with the same bits.
    if (j->seq_len && (size_t)j->seq_len[b] < v.tk)
        v.klen = (size_t)j->seq_len[b];
    return v;
}

// Whether sequence b takes the one-row decode path (decode.c): one query
// row that sees every stored key but those before a window, with no mask
// and no weights to return. Decided per sequence, so a sequence's bits never
// depend on the rest of the batch.
static inline int mhsa__seq_decodes(const attn_job *j, const seq_view *v)
{
    return v->rows == 1 && !j->mask && !j->attn && !v->klen &&
           (!j->causal || v->q_pos + 1 >= v->tk);
}

// Runs the job: decode sequences through decode.c, the others through
// FlashAttention-style tiles (attention.c) over (sequence, head, query
// block). ctx rows past a sequence's rows are left alone.
void mhsa__attention(const mhsa_kernels *k, mhsa_workspace *ws,
                     const attn_job *j);
// The decode sequences of the job (mhsa__seq_decodes), for mhsa__attention.
void mhsa__attention_decode(const mhsa_kernels *k, mhsa_workspace *ws,
                            const attn_job *j);

#endif
