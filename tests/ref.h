// ref.h — a naive double-precision multi-head self-attention, written
// from the formulas of the API document with the whole T x T matrix and
// independent of the library (no kernels, no tiles): the reference of the
// block's tests. One forward covers every variant (grouped-query heads,
// rotary embedding, sliding window, key padding, a cache position, K/V
// rounded like a 16-bit cache); the analytic backward covers the plain
// block (ref_mha), whose forward is the same code with those switched off.
#ifndef MHSA_TEST_REF_H
#define MHSA_TEST_REF_H

#include <stddef.h>

// ---- every variant: forward ------------------------------------------------

typedef struct refv {
    int B, T, D, H, Hkv, causal, bias;
    int rope_dim, rope_interleaved, window;
    double rope_theta;          // 0 means 10000
    const float *w_qkv;         // ((H + 2 Hkv) dh, D)
    const float *b_qkv;         // ((H + 2 Hkv) dh) or NULL
    const float *w_out, *b_out; // (D, D), (D) or NULL
    const float *x;             // (B, T, D)
    const float *mask;          // (T, T) additive or NULL
    const int *seq_len;         // (B) key padding or NULL
    int pos0;                   // position of row 0 (RoPE, window, causal)
    // When set, K and V are rounded to this storage type after the
    // projection and the rotation (1: F16, 2: BF16), as a KV cache stores
    // them.
    int kv_round;
} refv;

// y (B, T, D) and, when attn is not NULL, attn (B, H, T, T). A row whose
// every key is blocked gets zero weights and a zero context.
void refv_forward(const refv *m, double *y, double *attn);

// Number of floats of w_qkv and b_qkv.
size_t refv_nqkv(const refv *m);

// ---- the plain block: forward and backward ---------------------------------

typedef struct ref_mha {
    int B, T, D, H, causal, bias;
    const float *w_qkv, *b_qkv, *w_out, *b_out;   // b_* NULL when bias == 0
    const float *x;       // (B, T, D)
    const float *mask;    // (T, T) additive or NULL
} ref_mha;

// y (B, T, D); attn (B, H, T, T) or NULL. A row whose every key is blocked
// gets zero weights and a zero context.
void ref_forward(const ref_mha *m, double *y, double *attn);
// Gradients of sum(y * dy): dx (B,T,D), g_w_qkv (3D,D), g_b_qkv (3D),
// g_w_out (D,D), g_b_out (D); any may be NULL.
void ref_backward(const ref_mha *m, const float *dy, double *dx,
                  double *g_w_qkv, double *g_b_qkv, double *g_w_out,
                  double *g_b_out);

#endif
