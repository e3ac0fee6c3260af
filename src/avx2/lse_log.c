// lse_log.c — the AVX2 log-sum-exp finish (kernels.h: lse_add_log):
// lse[i] + log(lsum[i]) for 8 rows a step, each half of 4 in double lanes
// doing kernels/log_f32.h's operations in its order (multiply, then add;
// no FMA), so every lane has the scalar reference's bits; the tail through
// the reference itself.
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/log_f32.h"
#include "avx2/avx2.h"

// mhsa_log_f64_core in each lane (any lane: the special ones are replaced
// by the caller).
static inline __m256d log_core(__m256d d)
{
    const __m256d one = _mm256_set1_pd(1.0);
    __m256i u = _mm256_castpd_si256(d);
    // (double)(u >> 52): the integer under 2^52 put in the mantissa of
    // 2^52 and 2^52 taken away, exactly.
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    __m256d be = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(u, 52),
                                            _mm256_castpd_si256(two52))),
        two52);
    __m256d m = _mm256_castsi256_pd(_mm256_or_si256(
        _mm256_and_si256(u, _mm256_set1_epi64x(0x000fffffffffffffLL)),
        _mm256_castpd_si256(one)));
    __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(1.5), _CMP_GE_OQ);
    m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
    be = _mm256_blendv_pd(be, _mm256_add_pd(be, one), big);
    __m256d e = _mm256_sub_pd(be, _mm256_set1_pd(1023.0));
    __m256d s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
    __m256d s2 = _mm256_mul_pd(s, s), t = _mm256_add_pd(s, s);
    __m256d p = _mm256_set1_pd(MHSA_LOG_C11);
    p = _mm256_add_pd(_mm256_mul_pd(p, s2), _mm256_set1_pd(MHSA_LOG_C9));
    p = _mm256_add_pd(_mm256_mul_pd(p, s2), _mm256_set1_pd(MHSA_LOG_C7));
    p = _mm256_add_pd(_mm256_mul_pd(p, s2), _mm256_set1_pd(MHSA_LOG_C5));
    p = _mm256_add_pd(_mm256_mul_pd(p, s2), _mm256_set1_pd(MHSA_LOG_C3));
    __m256d lm = _mm256_add_pd(t, _mm256_mul_pd(t, _mm256_mul_pd(s2, p)));
    return _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(MHSA_LOG_LN2)), lm);
}

// mhsa_log_f32 of 4 floats.
static inline __m128 log4(__m128 x)
{
    __m256d d = _mm256_cvtps_pd(x);
    __m128 y = _mm256_cvtpd_ps(log_core(d));
    // The special lanes, as mhsa_log_f32 tests them (on d), as floats.
    const __m256d zero = _mm256_setzero_pd();
    __m128 pos = _mm256_cvtpd_ps(_mm256_cmp_pd(d, zero, _CMP_GT_OQ));
    __m128 inf = _mm256_cvtpd_ps(
        _mm256_cmp_pd(d, _mm256_set1_pd(INFINITY), _CMP_EQ_OQ));
    __m128 zer = _mm256_cvtpd_ps(_mm256_cmp_pd(d, zero, _CMP_EQ_OQ));
    __m128 nan = _mm256_cvtpd_ps(_mm256_cmp_pd(d, d, _CMP_UNORD_Q));
    __m128 r = _mm_castsi128_ps(_mm_set1_epi32((int)MHSA_LOG_NAN_BITS));
    r = _mm_blendv_ps(r, _mm_add_ps(x, x), nan);
    r = _mm_blendv_ps(r, _mm_set1_ps(-INFINITY), zer);
    r = _mm_blendv_ps(r, _mm_set1_ps(INFINITY), inf);
    return _mm_blendv_ps(r, y, _mm_andnot_ps(inf, pos));
}

void mhsa_lse_add_log__avx2(size_t n, float *lse, const float *lsum)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(lsum + i);
        __m256 l = _mm256_insertf128_ps(
            _mm256_castps128_ps256(log4(_mm256_castps256_ps128(x))),
            log4(_mm256_extractf128_ps(x, 1)), 1);
        _mm256_storeu_ps(lse + i, _mm256_add_ps(_mm256_loadu_ps(lse + i), l));
    }
    for (; i < n; i++)
        lse[i] = lse[i] + mhsa_log_f32(lsum[i]);
}
