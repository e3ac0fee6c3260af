// ref.h — a naive double-precision multi-head self-attention (forward and
// analytic backward), written from the formulas with the whole T x T
// matrix: the independent reference for the block's tests.
#ifndef MHSA_TEST_REF_H
#define MHSA_TEST_REF_H

#include <stddef.h>

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
