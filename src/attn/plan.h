// plan.h — sizes that the workspace is made with and the drivers work in,
// in one place low down: decode key chunks and their partial results, the
// per-thread tile memory, and the per-call task tables of ragged batches.
#ifndef MHSA_PLAN_H
#define MHSA_PLAN_H

#include <stddef.h>

#include "kernels/kernels.h"

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
size_t mhsa__decode_partial_floats(size_t batch, size_t H, size_t t,
                                   size_t dh);

// Floats of tile memory one thread needs: the attention tiles of the
// largest table for heads of size dh, and the decode scores of a group of
// `group` query heads over one chunk. 0 on overflow.
size_t mhsa__tile_floats(size_t dh, size_t group);

// Entries of the per-call task table (size_t) for up to max_batch
// sequences: prefix sums of the decode and the tiled tasks.
static inline size_t mhsa__plan_entries(size_t max_batch)
{
    return 2 * (max_batch + 1);
}

#endif
