// vhalf.h — static inline AVX2/F16C helpers that read and write rows
// stored as fp32, F16 or BF16 (the KV cache's dtypes), eight elements at a
// time, converting in registers. Shared by src/avx2/kv_dot.c, kv_acc.c and
// src/avx2/convert.c; included only by files compiled with -mavx2 -mfma
// -mf16c.
#ifndef MHSA_AVX2_VHALF_H
#define MHSA_AVX2_VHALF_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "mhsa.h"

// Forced inline: the callers pass dt as a constant, so each dtype gets its
// own loop with no dtype test inside.
#define MHSA_AVX2_INLINE static inline __attribute__((always_inline))

// Eight F16 values to fp32 (exact; vcvtph2ps).
MHSA_AVX2_INLINE __m256 mhsa_f16x8_to_ps__avx2(__m128i h)
{
    return _mm256_cvtph_ps(h);
}

// Eight BF16 values to fp32: the top half of each fp32 (exact).
MHSA_AVX2_INLINE __m256 mhsa_bf16x8_to_ps__avx2(__m128i h)
{
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Elements i..i+7 of a row stored as dt, as fp32.
MHSA_AVX2_INLINE __m256 mhsa_load8_as_ps__avx2(const void *row, size_t i,
                                               mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return _mm256_loadu_ps((const float *)row + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    return dt == MHSA_F16 ? mhsa_f16x8_to_ps__avx2(h)
                          : mhsa_bf16x8_to_ps__avx2(h);
}

// Elements i..i+t-1 (t < 8) of a row stored as dt, as fp32, zeros in the
// lanes above; nothing past element i+t-1 is read. mask has the first t
// lanes set (mhsa_tail_mask__avx2(t)), for fp32's masked load; 16-bit rows
// have no masked load, so their few elements go through a small buffer.
MHSA_AVX2_INLINE __m256 mhsa_load_tail_as_ps__avx2(const void *row, size_t i,
                                                   size_t t, __m256i mask,
                                                   mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return _mm256_maskload_ps((const float *)row + i, mask);
    uint16_t buf[8] = { 0 };
    memcpy(buf, (const uint16_t *)row + i, t * sizeof(uint16_t));
    return mhsa_load8_as_ps__avx2(buf, 0, dt);
}

// The even and odd elements of x[0..16) as two vectors, and back. BF16
// rows read 16 at a time come apart that way: the even values are the
// 32-bit lanes shifted up, the odd ones the lanes masked.
MHSA_AVX2_INLINE void mhsa_split_even_odd__avx2(const float *x, __m256 *ev, __m256 *od)
{
    __m256 a = _mm256_loadu_ps(x), b = _mm256_loadu_ps(x + 8);
    *ev = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    *od = _mm256_castpd_ps(_mm256_permute4x64_pd(
        _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
}

MHSA_AVX2_INLINE void mhsa_merge_even_odd__avx2(float *x, __m256 ev, __m256 od)
{
    __m256 lo = _mm256_unpacklo_ps(ev, od), hi = _mm256_unpackhi_ps(ev, od);
    _mm256_storeu_ps(x, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(x + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

#endif
