// decode.h — attention for the sequences of a call that decode one row
// (attn_seq.decodes), and the sizes the workspace makes for it.
#ifndef MHSA_ATTN_DECODE_H
#define MHSA_ATTN_DECODE_H

#include "core/alloc.h"
#include "view.h"

// Keys per decode chunk: enough tasks for every thread even with one
// sequence and few heads, and 256 x dh of K and V per chunk stays in L2.
// Chunks start at a sequence's first visible key, fixed by the sequence
// alone, so the bits never depend on the thread count or the batch.
enum { MHSA_DECODE_CHUNK = 256 };

// Chunks of the keys [lo, hi).
static inline size_t mhsa__decode_chunks(size_t lo, size_t hi)
{
    return (hi - lo + MHSA_DECODE_CHUNK - 1) / MHSA_DECODE_CHUNK;
}

// Floats of per-chunk partials (m, l, o[dh]) for up to `batch` sequences
// of up to `t` keys with H query heads; 0 on overflow.
static inline size_t mhsa__decode_partial_floats(size_t batch, size_t H,
                                                 size_t t, size_t dh)
{
    size_t chunks = mhsa__decode_chunks(0, t), f;
    if (!mhsa__mul3(batch, H, chunks, &f) || !mhsa__mul(f, dh + 2, &f))
        return 0;
    return f;
}

// Floats of per-thread tile memory decode needs: the scores of a group of
// `group` query heads over one chunk. 0 on overflow.
static inline size_t mhsa__decode_tile_floats(size_t group)
{
    size_t f;
    return mhsa__mul(group, MHSA_DECODE_CHUNK, &f) ? f : 0;
}

// The decode sequences of the view, for mhsa__attention: each one's ctx
// row (and lse) from the partials of its key chunks, in s->decode.
void mhsa__attention_decode(const mhsa_kernels *k, const attn_scratch *s,
                            const attn_view *v);

// The same in two parts, for a caller that runs it inside a parallel
// region of its own (api/cached_step.c: one region per one-token step).
// The plan writes the task table into s->plan (before the region, on one
// thread) and returns the task count and the work (*flops) that
// mhsa__threads sizes the team by; the team part runs in every thread of
// the enclosing region (or alone, outside one), its tasks split by
// orphaned `omp for` loops, each ending with a barrier. The tasks are
// fixed by the sequences alone, so the bits never depend on the team.
size_t mhsa__decode_plan(const attn_scratch *s, const attn_view *v,
                         double *flops);
void mhsa__decode_team(const mhsa_kernels *k, const attn_scratch *s,
                       const attn_view *v);

#endif
