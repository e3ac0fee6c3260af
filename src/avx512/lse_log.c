// lse_log.c — the AVX-512 log-sum-exp finish (kernels.h: lse_add_log):
// lse[i] + log(lsum[i]) for 16 rows a step, each half of 8 in double lanes
// doing kernels/log_f32.h's operations in its order (multiply, then add;
// no FMA), so every lane has the scalar reference's bits; a masked tail.
#include <math.h>

#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "kernels/log_f32.h"

// mhsa_log_f64_core in each lane (any lane: the special ones are replaced
// by the caller).
MHSA_AVX512_INLINE __m512d log_core(__m512d d)
{
    const __m512d one = _mm512_set1_pd(1.0);
    __m512i u = _mm512_castpd_si512(d);
    // (double)(u >> 52): the integer under 2^52 put in the mantissa of
    // 2^52 and 2^52 taken away, exactly.
    const __m512d two52 = _mm512_set1_pd(4503599627370496.0);
    __m512d be = _mm512_sub_pd(
        _mm512_castsi512_pd(_mm512_or_si512(_mm512_srli_epi64(u, 52),
                                            _mm512_castpd_si512(two52))),
        two52);
    __m512d m = _mm512_castsi512_pd(_mm512_or_si512(
        _mm512_and_si512(u, _mm512_set1_epi64(0x000fffffffffffffLL)),
        _mm512_castpd_si512(one)));
    __mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.5), _CMP_GE_OQ);
    m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
    be = _mm512_mask_add_pd(be, big, be, one);
    __m512d e = _mm512_sub_pd(be, _mm512_set1_pd(1023.0));
    __m512d s = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
    __m512d s2 = _mm512_mul_pd(s, s), t = _mm512_add_pd(s, s);
    __m512d p = _mm512_set1_pd(MHSA_LOG_C11);
    p = _mm512_add_pd(_mm512_mul_pd(p, s2), _mm512_set1_pd(MHSA_LOG_C9));
    p = _mm512_add_pd(_mm512_mul_pd(p, s2), _mm512_set1_pd(MHSA_LOG_C7));
    p = _mm512_add_pd(_mm512_mul_pd(p, s2), _mm512_set1_pd(MHSA_LOG_C5));
    p = _mm512_add_pd(_mm512_mul_pd(p, s2), _mm512_set1_pd(MHSA_LOG_C3));
    __m512d lm = _mm512_add_pd(t, _mm512_mul_pd(t, _mm512_mul_pd(s2, p)));
    return _mm512_add_pd(_mm512_mul_pd(e, _mm512_set1_pd(MHSA_LOG_LN2)), lm);
}

// mhsa_log_f32 of 8 floats. The conversions go 4 lanes at a time through
// the AVX ones (the same roundings): SIMDe 0.7.4, which the emulated
// build runs on, lacks the 512-bit ones.
MHSA_AVX512_INLINE __m256 log8(__m256 x)
{
    __m512d d = _mm512_insertf64x4(
        _mm512_castpd256_pd512(_mm256_cvtps_pd(_mm256_castps256_ps128(x))),
        _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), 1);
    __m512d ld = log_core(d);
    __m256 y = _mm256_insertf128_ps(
        _mm256_castps128_ps256(_mm256_cvtpd_ps(_mm512_castpd512_pd256(ld))),
        _mm256_cvtpd_ps(_mm512_extractf64x4_pd(ld, 1)), 1);
    // The special lanes, as mhsa_log_f32 tests them (on d).
    const __m512d zero = _mm512_setzero_pd();
    __mmask8 pos = _mm512_cmp_pd_mask(d, zero, _CMP_GT_OQ);
    __mmask8 inf = _mm512_cmp_pd_mask(d, _mm512_set1_pd(INFINITY),
                                      _CMP_EQ_OQ);
    __mmask8 zer = _mm512_cmp_pd_mask(d, zero, _CMP_EQ_OQ);
    __mmask8 nan = _mm512_cmp_pd_mask(d, d, _CMP_UNORD_Q);
    __m256 r = _mm256_castsi256_ps(_mm256_set1_epi32((int)MHSA_LOG_NAN_BITS));
    r = _mm256_mask_mov_ps(r, nan, _mm256_add_ps(x, x));
    r = _mm256_mask_mov_ps(r, zer, _mm256_set1_ps(-INFINITY));
    r = _mm256_mask_mov_ps(r, inf, _mm256_set1_ps(INFINITY));
    return _mm256_mask_mov_ps(r, pos & (__mmask8)~inf, y);
}

MHSA_AVX512_INLINE __m512 log16(__m512 x)
{
    __m256 lo = log8(_mm512_castps512_ps256(x));
    __m256 hi = log8(_mm256_castpd_ps(
        _mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

void mhsa_lse_add_log__avx512(size_t n, float *lse, const float *lsum)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(lse + i,
                         _mm512_add_ps(_mm512_loadu_ps(lse + i),
                                       log16(_mm512_loadu_ps(lsum + i))));
    if (i < n) {
        __mmask16 k = mhsa_mask16__avx512(n - i);
        // Masked-off lanes load 1 (log 0, no special case) and are not
        // stored.
        __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), k, lsum + i);
        _mm512_mask_storeu_ps(lse + i, k,
                              _mm512_add_ps(_mm512_maskz_loadu_ps(k, lse + i),
                                            log16(x)));
    }
}
