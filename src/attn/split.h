// split.h — from the QKV projection to heads, and back for the gradients.
//
// The forward splits each projection row [q (H*dh) | k (Hkv*dh) |
// v (Hkv*dh)] into per-head rows in one pass: q scaled by 1/sqrt(dh), and
// q and k rotated (RoPE) while they are copied, k and v rounded to the
// cache's storage type when they go into a KV cache. The backward turns
// the gradients of the rotated q and k back into gradients of the
// projection (the inverse rotation) in place.
#ifndef MHSA_SPLIT_H
#define MHSA_SPLIT_H

#include "kernels/kernels.h"

// The block's heads and rotation tables, as the split sees them (the API
// fills it from its block: mhsa__head_layout in api/objects.h).
typedef struct head_layout {
    size_t D, H, Hkv, dh;
    size_t nqkv;              // (H + 2*Hkv) * dh: a projection row
    size_t rope_half;         // rotated pairs per head (0: no RoPE)
    int rope_interleaved;     // pairs (x[2i], x[2i+1]), else (x[i], x[i+R/2])
    // cos and sin of each position's angles, (positions, rope_half)
    const float *rope_cos, *rope_sin;
} head_layout;

typedef struct split_args {
    size_t batch, t;          // sequences, projection rows per sequence
    const float *qkv;         // (batch * t, nqkv)
    float *q;                 // (batch, H, t, dh) out
    void *k, *v;              // (batch, Hkv, kv_t, dh) out, stored as dt
    size_t kv_t;
    mhsa_dtype dt;
    // Row r of sequence b is at position pos[b] + r (pos NULL: pos0 + r),
    // and only rows r < rows[b] (rows NULL: all t) are written to k and v.
    const size_t *pos;
    size_t pos0;
    const int *rows;
    float *tmp;               // dh floats of scratch
} split_args;

void mhsa__split_heads(const mhsa_kernels *k, const head_layout *lay,
                       const split_args *a);

// dqkv (batch * t, nqkv) holds the gradients of the rotated q and k of a
// forward at positions 0 .. t-1; rotates them back (R^T), in place. A no-op
// without RoPE.
void mhsa__rope_backward(const head_layout *lay, size_t batch, size_t t,
                         float *dqkv);

#endif
