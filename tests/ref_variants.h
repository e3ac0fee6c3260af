// ref_variants.h — a naive double-precision reference of the 0.2 attention
// variants: grouped-query heads, rotary position embedding, sliding
// window and key padding, from the formulas of the API document, with the
// whole T x T matrix. Independent of the library (no kernels, no tiles).
#ifndef MHSA_TEST_REF_VARIANTS_H
#define MHSA_TEST_REF_VARIANTS_H

#include <stddef.h>

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

#endif
