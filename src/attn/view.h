// view.h — what the query rows of one attention call see, derived once per
// call and read by the tiled loop (attend.c), decode (decode.c) and the
// backward (api/backward.c).
//
// A job describes the call; its view holds, per sequence b, the query rows,
// the position of row 0, the keys stored, the padding, the first key any
// row sees and whether the sequence decodes. With the job's causal flag,
// window and mask that is the mask view of kernels.h, whose
// mhsa_mask_view_range (and mhsa_window_first) is the one row rule. Query
// head h reads kv head h / group.
#ifndef MHSA_ATTN_VIEW_H
#define MHSA_ATTN_VIEW_H

#include "attention.h"
#include "scratch.h"

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
    // 0, or q, k and v are read in place in the QKV projection (forward.c's
    // unsplit small forward): row r of sequence b at (b * tq + r) * ldqkv
    // (kv_t == tq), head h at h * dh from q, k or v, and q not scaled yet.
    // Only the fused small view reads that: mhsa__attention then returns
    // 0 when it declined a block (the other blocks still run), and the
    // caller splits and calls again.
    size_t ldqkv;
    mhsa_dtype kv_dtype;
    float *ctx;              // (batch, tq, H*dh) merged output
    float *lse;              // (batch, H, tq) or NULL
    // (batch, H, tq) or NULL. With it the forward leaves each row's max in
    // lse and its sum in lsum, for mhsa__attn_finish_lse to turn into the
    // log-sum-exp when a backward needs it (no log per row in a forward
    // that never runs backward); without it lse is the log-sum-exp.
    float *lsum;
    float *attn;             // (batch, H, tq, tk) or NULL
    // Products in bf16 (MHSA_BF16) or fp32: head_args.compute. The one-row
    // decode path streams fp32 products, so with BF16 every sequence
    // takes the tiled loop, whose packers round (attn_seq.decodes).
    mhsa_dtype compute;
} attn_job;

// What the query rows of sequence b see.
struct attn_seq {
    size_t rows;    // query rows computed (rows past them are not)
    size_t q_pos;   // absolute position of row 0
    size_t tk;      // keys stored: positions 0 .. tk-1
    size_t klen;    // 0, or keys >= klen are padding
    // The first key any row sees: with a sliding window none before the
    // first row's window. Tiles wholly before it are never read.
    size_t lo;
    // The one-row decode path (decode.c): one query row that sees every
    // stored key from lo on, with no mask and no weights to return.
    // Decided per sequence, so a sequence's bits never depend on the rest
    // of the batch.
    int decodes;
};

typedef struct attn_view {
    const attn_job *job;
    const attn_seq *seq;    // (job->batch)
    size_t kv_row_bytes;    // one stored row of k or v (dh in kv_dtype)
    size_t kv_head_bytes;   // one kv head's kv_t rows
    // Per call, not per block: a block's arguments were two divisions
    // (the group, the head's kv head) and a square root and a division
    // (the scale), each tens of cycles, much for a tiny view
    // (docs/performance.md, "Measurements behind the code").
    size_t group;           // query heads per kv head, H / Hkv
    float scale;            // 1 / sqrt(dh)
    int group_shift;        // log2(group) if a power of two, else -1
} attn_view;

// Derives the view of every sequence of j into seqs (job->batch entries).
attn_view mhsa__attn_view(const attn_job *j, attn_seq *seqs);

// The (query row, key) pairs sequence b's rows see under the causal mask,
// the window and the padding (an additive mask not counted): the work the
// thread count is sized by (core/threads.h), so a causal T x T call counts
// its T (T + 1) / 2 pairs, not T^2.
double mhsa__view_pairs(const attn_view *view, size_t b);

// The kv head of its sequence (0 .. Hkv - 1) that query head h reads: a
// shift when the group is a power of two (multi-head attention's 1
// among them). The compiler made `group == 1 ? h : h / group` one 64-bit
// division a block (h / 1 is h), a measurable part of the tiny forward+
// backward's time (docs/performance.md, "Measurements behind the code").
static inline size_t mhsa__view_group_head(const attn_view *v, size_t h)
{
    return v->group_shift >= 0 ? h >> v->group_shift : h / v->group;
}

// The kv head (index over batch * Hkv) that query head h of sequence b
// reads.
static inline size_t mhsa__view_kv_head(const attn_view *v, size_t b,
                                        size_t h)
{
    return b * v->job->Hkv + mhsa__view_group_head(v, h);
}

// The stored K and V rows of kv head kvh (index over batch * Hkv).
static inline const char *mhsa__view_k(const attn_view *v, size_t kvh)
{
    return (const char *)v->job->k + kvh * v->kv_head_bytes;
}

static inline const char *mhsa__view_v(const attn_view *v, size_t kvh)
{
    return (const char *)v->job->v + kvh * v->kv_head_bytes;
}

// Sets in *a the arguments of the query block of head h of sequence b that
// starts at row r0 and holds up to br rows: pointers offset to the head,
// its kv head and row r0; the rules of the row's mask view. (The forward's
// packed tiles and the backward's gradients are added by the caller.)
// Every other field of *a is left as it was: a loop over blocks zeroes its
// head_args once instead of building and copying the ~300-byte struct per
// block (the rep stos and rep movs were ~150 instructions a block, 32
// blocks a call of the tiny forward).
void mhsa__view_block_set(const attn_view *v, size_t b, size_t h,
                          size_t r0, size_t br, head_args *a);

#endif
