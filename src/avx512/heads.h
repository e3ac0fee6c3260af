// heads.h — what the AVX-512 kernels for several heads at once share
// (attn_heads.c, attn_heads_bwd.c): K and V read by columns, the four
// heads' value of a key and column side by side, and its broadcast to the
// (row, head) lanes (lane 4 i + hh). Static inline, AVX-512 files only
// (vmath.h says why).
#ifndef MHSA_AVX512_HEADS_H
#define MHSA_AVX512_HEADS_H

#include "avx512/vtranspose.h"

// Two 8-float rows as one vector: x in lanes 0-7, y in 8-15.
MHSA_AVX512_INLINE __m512 mhsa_two_rows__avx512(const float *x,
                                                const float *y)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(x)),
                              _mm256_loadu_ps(y), 1);
}

// Key j's 8 columns of 4 heads, column-major: dst[4 c + hh] =
// src[hh][off + c] (32 floats). contiguous: the 4 heads' rows are 32
// floats in a row (src[hh] = src[0] + 8 hh), read as two vectors.
// vpermt2ps index of lane L = 4 c + hh in (a, b) = (heads 0, 1 | 2, 3):
#define MHSA_KV_T(e, L)                                                   \
    ((((L) & 3) >> 1) * 16 + ((L) & 1) * 8 + ((L) >> 2) + 4 * (e))
#define MHSA_KV_T0(L) MHSA_KV_T(0, L)
#define MHSA_KV_T1(L) MHSA_KV_T(1, L)
MHSA_AVX512_INLINE void mhsa_kv_columns__avx512(const float *const src[4],
                                                size_t off, int contiguous,
                                                float *dst)
{
    __m512 a, b;
    if (contiguous) {
        a = _mm512_loadu_ps(src[0] + off);
        b = _mm512_loadu_ps(src[0] + off + 16);
    } else {
        a = mhsa_two_rows__avx512(src[0] + off, src[1] + off);
        b = mhsa_two_rows__avx512(src[2] + off, src[3] + off);
    }
    _mm512_storeu_ps(dst,
                     _mm512_permutex2var_ps(a, MHSA_IDX16(MHSA_KV_T0), b));
    _mm512_storeu_ps(dst + 16,
                     _mm512_permutex2var_ps(a, MHSA_IDX16(MHSA_KV_T1), b));
}

// Element c of a key for every lane's head: t[4 c + hh] (the key's
// mhsa_kv_columns__avx512 row at t) in the 4 lanes of each row. A
// vbroadcastf32x4 from memory, which on the Intel Xeon costs a shuffle
// uop as well as the load (measured in attn_heads.c against a scalar
// broadcast: docs/performance.md, "Measurements behind the code"); storing
// each column expanded to 16 lanes instead was slower (192 more 64-byte
// stores a call).
MHSA_AVX512_INLINE __m512 mhsa_head_bcast__avx512(const float *t, size_t c)
{
    return _mm512_broadcast_f32x4(_mm_loadu_ps(t + 4 * c));
}

#endif
