// permute.h — the strided 4-D copy with scale that splits the QKV
// projection into heads (split.c) and merges heads back: the loop nest,
// written once over the table's row op (kernels.h: scale_copy).
#ifndef MHSA_PERMUTE_H
#define MHSA_PERMUTE_H

#include <stddef.h>

#include "kernels/kernels.h"

// dst[i0][i1][i2][i3] = scale * src[i0][i1][i2][i3] for a logical (n0, n1,
// n2, n3) tensor whose innermost dimension is contiguous on both sides and
// whose outer dimensions have arbitrary strides. Splitting heads is the
// view src (B, T, H, dh) with strides (T*3D, 3D, dh) and dst strides
// (H*T*dh, dh, T*dh); merging is the reverse. scale == 1 copies bitwise.
typedef struct mhsa_permute_args {
    size_t n0, n1, n2, n3;
    const float *src;  size_t src_s0, src_s1, src_s2;
    float *dst;        size_t dst_s0, dst_s1, dst_s2;
    float scale;
} mhsa_permute_args;

// Runs the copy, one k->scale_copy per (i0, i1, i2) row of n3 floats.
void mhsa__permute_4d(const mhsa_kernels *k, const mhsa_permute_args *a);

#endif
