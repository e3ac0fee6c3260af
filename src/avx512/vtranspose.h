// vtranspose.h — transposes of 32-bit lanes in registers: 16x16, shared
// by the fp32 packers (pack.c) and the bf16 packers (bf16_pack_*.c, which
// transpose pairs of bf16 as 32-bit lanes), and 16 rows of up to 8
// columns read from memory, for the small attention kernels (attn_small.c,
// small_bwd.h). Static
// inline, AVX-512 files only (vmath.h says why).
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

// Lane L of a 16-lane index vector built from an expression f(L).
#define MHSA_IDX16(f)                                                     \
    _mm512_set_epi32(f(15), f(14), f(13), f(12), f(11), f(10), f(9),     \
                     f(8), f(7), f(6), f(5), f(4), f(3), f(2), f(1), f(0))
// The three steps of mhsa_transpose16x8__avx512 (lane L; vpermt2ps takes
// a's lanes as 0..15 and b's as 16..31): columns 4e.. of 4 rows, lane
// (c & 3) * 4 + r; columns 2f, 2f + 1 of 4 + 4 rows, lane (c & 1) * 8 + r;
// column c of 8 + 8 rows, lane r.
#define MHSA_T8_STEP1(e, L)                                               \
    (((L) & 3) < 2 ? ((L) & 3) * 8 + 4 * (e) + ((L) >> 2)                 \
                   : 16 + (((L) & 3) - 2) * 8 + 4 * (e) + ((L) >> 2))
#define MHSA_T8_STEP1_0(L) MHSA_T8_STEP1(0, L)
#define MHSA_T8_STEP1_1(L) MHSA_T8_STEP1(1, L)
#define MHSA_T8_STEP2(f, L)                                               \
    (((L) & 7) < 4 ? 0 : 16) + (2 * (f) + ((L) >> 3)) * 4 + ((L) & 3)
#define MHSA_T8_STEP2_0(L) MHSA_T8_STEP2(0, L)
#define MHSA_T8_STEP2_1(L) MHSA_T8_STEP2(1, L)
#define MHSA_T8_STEP3(c, L) ((L) < 8 ? 0 : 16) + (c) * 8 + ((L) & 7)
#define MHSA_T8_STEP3_0(L) MHSA_T8_STEP3(0, L)
#define MHSA_T8_STEP3_1(L) MHSA_T8_STEP3(1, L)

// t[c] lane r = column c of row r, for 16 rows of 8 columns held two to a
// vector (v[k]: row 2k in lanes 0-7, row 2k + 1 in lanes 8-15): three
// steps of 8 two-source permutes, 24 shuffles where transpose16 takes 64
// (and 8 loads where it takes 16).
MHSA_AVX512_INLINE void mhsa_transpose16x8__avx512(const __m512 v[8],
                                                   __m512 t[8])
{
    __m512 p[8], u[8];
    const __m512i i1[2] = { MHSA_IDX16(MHSA_T8_STEP1_0),
                            MHSA_IDX16(MHSA_T8_STEP1_1) };
    const __m512i i2[2] = { MHSA_IDX16(MHSA_T8_STEP2_0),
                            MHSA_IDX16(MHSA_T8_STEP2_1) };
    const __m512i i3[2] = { MHSA_IDX16(MHSA_T8_STEP3_0),
                            MHSA_IDX16(MHSA_T8_STEP3_1) };
    for (int m = 0; m < 4; m++)         // rows 4m..: p[2m + e]
        for (int e = 0; e < 2; e++)
            p[2 * m + e] = _mm512_permutex2var_ps(v[2 * m], i1[e],
                                                  v[2 * m + 1]);
    for (int g = 0; g < 2; g++)         // rows 8g..: u[4g + 2e + f]
        for (int e = 0; e < 2; e++)
            for (int f = 0; f < 2; f++)
                u[4 * g + 2 * e + f] = _mm512_permutex2var_ps(
                    p[4 * g + e], i2[f], p[4 * g + 2 + e]);
    for (int c = 0; c < 8; c++)         // c = 4e + 2f + (c & 1)
        t[c] = _mm512_permutex2var_ps(u[c >> 1], i3[c & 1], u[4 + (c >> 1)]);
}

// t[c] lane r = x[r * ld + c] for r < rows (<= 16), c < cols (<= 8); +0
// elsewhere: the rows read two to a vector and transposed by
// mhsa_transpose16x8__avx512. Rows packed 8 apart with all 8 columns
// (ld == cols == 8) take one load per two rows. Each branch transposes
// its own vectors: one transpose after the branches kept v on the stack
// (16 more moves a call).
MHSA_AVX512_INLINE void mhsa_columns8__avx512(const float *x, size_t ld,
                                              size_t rows, size_t cols,
                                              __m512 t[8])
{
    __m512 v[8];
    const __m512 zero = _mm512_setzero_ps();
    if (ld == 8 && cols == 8) {
        for (size_t k = 0; k < 8; k++)
            v[k] = 2 * k + 1 < rows ? _mm512_loadu_ps(x + 16 * k)
                   : 2 * k < rows   ? _mm512_maskz_loadu_ps(0x00ff,
                                                            x + 16 * k)
                                    : zero;
        mhsa_transpose16x8__avx512(v, t);
        return;
    }
    __mmask16 mk = mhsa_mask16__avx512(cols);
    for (size_t k = 0; k < 8; k++) {
        __m512 a = 2 * k < rows ? _mm512_maskz_loadu_ps(mk, x + 2 * k * ld)
                                : zero;
        __m512 b = 2 * k + 1 < rows
                       ? _mm512_maskz_loadu_ps(mk, x + (2 * k + 1) * ld)
                       : zero;
        v[k] = _mm512_insertf32x8(a, _mm512_castps512_ps256(b), 1);
    }
    mhsa_transpose16x8__avx512(v, t);
}

#endif
