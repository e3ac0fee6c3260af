// forward.h — pieces of the forward pass that backward.c and the KV-cache
// path share with mhsa_forward.
#ifndef MHSA_FORWARD_H
#define MHSA_FORWARD_H

#include "mhsa_internal.h"

// Every (batch, head) of one attention call: queries (batch, H, tq, dh),
// keys/values (batch, H, kv_t, dh) of which the first tk are used.
typedef struct attn_job {
    size_t batch, H, dh, tq, tk, kv_t;
    size_t q_pos;            // absolute position of query row 0
    int causal;
    const float *mask;       // (tq, tk) additive, or NULL
    const float *q, *k, *v;
    float *ctx;              // (batch, tq, H*dh) merged output
    float *lse;              // (batch, H, tq) or NULL
    float *attn;             // (batch, H, tq, tk) or NULL
} attn_job;

// Threads for a parallel loop: 1 below a work threshold, else up to the
// workspace's and OpenMP's limits. Never changes results, only speed.
int mhsa__threads(const mhsa_workspace *ws, double flops, size_t tasks);
void mhsa__linear(const mhsa_kernels *k, const mhsa_workspace *ws,
                  size_t rows, size_t n, size_t kdim, const float *x,
                  const float *w, const float *w_packed, const float *b,
                  float *y);
void mhsa__split_heads(const mhsa_kernels *k, const mhsa_block *blk,
                       size_t batch, size_t t, const float *qkv, float *q,
                       float *kd, float *vd, size_t kv_t, size_t kv_pos);
// decode.c: whether a job is one query row per head seeing every key, and
// the attention for such a job.
int mhsa__is_decode(const attn_job *j);
void mhsa__attention_decode(const mhsa_kernels *k, mhsa_workspace *ws,
                            const attn_job *j);
// Floats of per-chunk partial results the one-token decode path needs.
size_t mhsa__decode_partial_floats(size_t batch, size_t H, size_t t,
                                   size_t dh);
void mhsa__attention(const mhsa_kernels *k, mhsa_workspace *ws,
                     const attn_job *j);

#endif
