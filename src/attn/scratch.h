// scratch.h — the memory an attention call works in, handed down by the API
// (the workspace carves it once; api/workspace.c) so that no driver sees the
// workspace itself, as the GEMM driver sees only its mhsa_gemm_scratch.
#ifndef MHSA_ATTN_SCRATCH_H
#define MHSA_ATTN_SCRATCH_H

#include <stddef.h>

typedef struct attn_seq attn_seq;   // one sequence's view (view.h)

typedef struct attn_scratch {
    int max_threads;          // per-thread tiles exist for this many threads
    float *tiles;             // max_threads * tile_floats
    size_t tile_floats;       // attention tiles or decode scores, per thread
    float *decode;            // decode partials (decode.h)
    size_t *plan;             // task tables: mhsa__plan_entries(max_batch)
    attn_seq *seqs;           // (max_batch) the call's views (view.h)
    // Where a forward may pack each kv head's K^T and V tiles once: the QKV
    // projection buffer, which the split into heads has finished with.
    float *pack;
    size_t pack_floats;
} attn_scratch;

// Entries of the per-call task table (size_t) for up to max_batch
// sequences: prefix sums of the decode and the tiled tasks.
static inline size_t mhsa__plan_entries(size_t max_batch)
{
    return 2 * (max_batch + 1);
}

#endif
