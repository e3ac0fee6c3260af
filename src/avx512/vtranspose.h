// vtranspose.h — the 16x16 transpose of 32-bit lanes in registers, shared
// by the fp32 packers (pack.c) and the bf16 packers (bf16_pack_*.c, which
// transpose pairs of bf16 as 32-bit lanes). Static inline, AVX-512 files
// only (vmath.h says why).
#ifndef MHSA_AVX512_VTRANSPOSE_H
#define MHSA_AVX512_VTRANSPOSE_H

#include "avx512/vmath.h"

// r[q] <- column q of the 16x16 block whose rows are r[0..15].
MHSA_AVX512_INLINE void mhsa_transpose16__avx512(__m512 r[16])
{
    // Within each 128-bit lane L (columns 4L..4L+3), for each group g of
    // rows 4g..4g+3: u[4g + c] lane L = column 4L + c of those 4 rows.
    __m512 u[16];
    for (int g = 0; g < 4; g++) {
        __m512 a = r[4 * g], b = r[4 * g + 1], c = r[4 * g + 2],
               d = r[4 * g + 3];
        __m512 t0 = _mm512_unpacklo_ps(a, b);   // a0 b0 a1 b1
        __m512 t1 = _mm512_unpackhi_ps(a, b);   // a2 b2 a3 b3
        __m512 t2 = _mm512_unpacklo_ps(c, d);
        __m512 t3 = _mm512_unpackhi_ps(c, d);
        u[4 * g + 0] = _mm512_shuffle_ps(t0, t2, 0x44);   // a0 b0 c0 d0
        u[4 * g + 1] = _mm512_shuffle_ps(t0, t2, 0xEE);   // a1 b1 c1 d1
        u[4 * g + 2] = _mm512_shuffle_ps(t1, t3, 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t1, t3, 0xEE);
    }
    // Gather lane L of u[c], u[4 + c], u[8 + c], u[12 + c] into column
    // 4L + c: even lanes (0, 2) and odd lanes (1, 3) of row groups 0/1 and
    // 2/3 first, then the four groups.
    for (int c = 0; c < 4; c++) {
        __m512 e01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        __m512 o01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        __m512 e23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        __m512 o23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[0 + c] = _mm512_shuffle_f32x4(e01, e23, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(e01, e23, 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(o01, o23, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(o01, o23, 0xDD);
    }
}

#endif
