// vmath.h — static inline AVX-512 helpers shared by the src/avx512/ files:
// tail masks, horizontal reductions, a vectorised expf and loads of K/V
// rows stored as fp32, f16 or bf16. Included only by files compiled for
// AVX-512 (static inline, so no AVX-512 body can be picked up by a
// baseline caller through the linker).
#ifndef MHSA_AVX512_VMATH_H
#define MHSA_AVX512_VMATH_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "avx512/intrin.h"

#define MHSA_AVX512_INLINE static inline __attribute__((always_inline))

// Lane mask with the first n lanes set (all 16 for n >= 16). Masked-off
// lanes of a load or store are neither read nor written (AVX-512 fault
// suppression), so tails never touch memory past n.
MHSA_AVX512_INLINE __mmask16 mhsa_mask16__avx512(size_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

// Upper 256 bits of v (vextractf64x4 is AVX512F; vextractf32x8 needs DQ
// and has no SIMDe alias).
MHSA_AVX512_INLINE __m256 mhsa_hi256__avx512(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// Horizontal sum and max by halving: a fixed tree, so the bits depend only
// on v (written out rather than _mm512_reduce_add_ps, whose tree is the
// compiler's).
MHSA_AVX512_INLINE float mhsa_hsum__avx512(__m512 v)
{
    __m256 y = _mm256_add_ps(_mm512_castps512_ps256(v),
                             mhsa_hi256__avx512(v));
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(y),
                          _mm256_extractf128_ps(y, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

// Max of 16 lanes that hold no NaN (callers keep NaN out: max_ps(x, acc)
// returns acc when x is NaN).
MHSA_AVX512_INLINE float mhsa_hmax__avx512(__m512 v)
{
    __m256 y = _mm256_max_ps(_mm512_castps512_ps256(v),
                             mhsa_hi256__avx512(v));
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(y),
                          _mm256_extractf128_ps(y, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

// exp(x) for 16 floats. Range reduction x = n ln2 + r, |r| <= ln2/2, with
// n = rint(x / ln2) (vrndscaleps) and ln2 split in two (Cody-Waite, the low
// part through FMA); exp(r) = 1 + r P(r) with P of degree 5, a minimax fit
// of the relative error on [-ln2/2, ln2/2] (tools/fit-exp-poly.py: 2.0e-9
// before rounding, one degree more than the AVX2 exp's, whose fit error is
// 9.2e-8); then vscalefps multiplies by 2^n with a single rounding, for
// every n in [-126, 128] (no split of the scale as in the AVX2 exp).
// The special values are the AVX2 exp's (src/avx2/vmath.h):
//  - x < -87.33654 (just above ln FLT_MIN, and -inf) gives an exact +0: no
//    result is denormal, so softmax never feeds denormals to P.V;
//  - x > ln(FLT_MAX) = 88.72283 (and +inf) gives +inf;
//  - NaN gives NaN (the clamps keep NaN: max/min return their second
//    operand when either is NaN).
// Accuracy against double exp over a dense sweep of [-87.3, 88.7]: see
// tests/test_avx512_emul.c (avx512_exp_accuracy; measured on the emulated
// build, whose arithmetic is the hardware's bit for bit).
MHSA_AVX512_INLINE __m512 mhsa_exp__avx512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(-87.33654f);
    const __m512 hi = _mm512_set1_ps(88.72283172607421875f);
    const __m512 log2e = _mm512_set1_ps(0x1.715476p+0f);
    const __m512 minus_ln2_hi = _mm512_set1_ps(-0x1.62E43p-1f);
    const __m512 minus_ln2_lo = _mm512_set1_ps(0x1.05C61p-29f);
    const __m512 c5 = _mm512_set1_ps(0x1.6ae6e0p-10f);
    const __m512 c4 = _mm512_set1_ps(0x1.1267d8p-7f);
    const __m512 c3 = _mm512_set1_ps(0x1.555824p-5f);
    const __m512 c2 = _mm512_set1_ps(0x1.555418p-3f);
    const __m512 c1 = _mm512_set1_ps(0x1.fffffcp-2f);
    const __m512 one = _mm512_set1_ps(1.0f);

    __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
    __m512 xc = _mm512_min_ps(hi, _mm512_max_ps(lo, x));   // NaN stays

    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, log2e),
                                    _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, minus_ln2_hi, xc);
    r = _mm512_fmadd_ps(n, minus_ln2_lo, r);

    __m512 p = _mm512_fmadd_ps(c5, r, c4);
    p = _mm512_fmadd_ps(p, r, c3);
    p = _mm512_fmadd_ps(p, r, c2);
    p = _mm512_fmadd_ps(p, r, c1);
    p = _mm512_fmadd_ps(p, r, one);
    __m512 e = _mm512_scalef_ps(_mm512_fmadd_ps(p, r, one), n);

    e = _mm512_mask_mov_ps(e, under, _mm512_setzero_ps());
    return _mm512_mask_mov_ps(e, over, _mm512_set1_ps(__builtin_inff()));
}

// ---- rows of a K/V cache in any storage type -----------------------------

// 16 elements i.. of a row stored as dt, as fp32 (exact); lanes outside mk
// are 0 and not read. dt is a constant wherever this is inlined.
MHSA_AVX512_INLINE __m512 mhsa_load_as_f32__avx512(const void *row, size_t i,
                                                  mhsa_dtype dt, __mmask16 mk)
{
    if (dt == MHSA_F32)
        return _mm512_maskz_loadu_ps(mk, (const float *)row + i);
    __m256i h = _mm256_maskz_loadu_epi16(mk, (const uint16_t *)row + i);
    if (dt == MHSA_F16)
        return _mm512_cvtph_ps(h);
    // bf16 is the top half of an fp32
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h),
                                                 16));
}

// The same for 16 whole elements (no mask).
MHSA_AVX512_INLINE __m512 mhsa_load16_as_f32__avx512(const void *row,
                                                    size_t i, mhsa_dtype dt)
{
    if (dt == MHSA_F32)
        return _mm512_loadu_ps((const float *)row + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)row
                                                     + i));
    if (dt == MHSA_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h),
                                                 16));
}

#endif
