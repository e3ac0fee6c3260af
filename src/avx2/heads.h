// heads.h — what the AVX2 kernels for several heads at once share
// (attn_heads.c, attn_heads_bwd.c): K and V read by columns, the four
// heads' value of a key and column side by side, and its broadcast to the
// (row, head) lanes (lane 4 i + hh).
#ifndef MHSA_AVX2_HEADS_H
#define MHSA_AVX2_HEADS_H

#include <immintrin.h>
#include <stddef.h>

// Key j's 8 columns of 4 heads, column-major: dst[4 c + hh] =
// src[hh][off + c] (32 floats), by 4x4 transposes in each 128-bit half.
static inline __attribute__((always_inline)) void
mhsa_kv_columns__avx2(const float *const src[4], size_t off, float *dst)
{
    __m256 a0 = _mm256_loadu_ps(src[0] + off);
    __m256 a1 = _mm256_loadu_ps(src[1] + off);
    __m256 a2 = _mm256_loadu_ps(src[2] + off);
    __m256 a3 = _mm256_loadu_ps(src[3] + off);
    __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
    __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
    // u[c] holds column c (low half) and column c + 4 (high half)
    __m256 u[4] = { _mm256_shuffle_ps(t0, t2, 0x44),
                    _mm256_shuffle_ps(t0, t2, 0xEE),
                    _mm256_shuffle_ps(t1, t3, 0x44),
                    _mm256_shuffle_ps(t1, t3, 0xEE) };
    for (int c = 0; c < 4; c++) {
        _mm_storeu_ps(dst + 4 * c, _mm256_castps256_ps128(u[c]));
        _mm_storeu_ps(dst + 4 * (c + 4), _mm256_extractf128_ps(u[c], 1));
    }
}

// Element c of a key for every lane's head: t[4 c + hh] (the key's
// mhsa_kv_columns__avx2 row at t) in both rows' 4 lanes, one
// vbroadcastf128 (a load).
static inline __attribute__((always_inline)) __m256
mhsa_head_col__avx2(const float *t, size_t c)
{
    return _mm256_broadcast_ps((const __m128 *)(t + 4 * c));
}

#endif
