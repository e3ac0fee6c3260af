// quant.c — the AVX-512 activation quantizers and the set of quantized
// products, mhsa_qkernels_avx512 (the products: quant_32.c, quant_k.c).
// Contract: kernels/quant.h; the quantizers give the scalar reference's
// bits exactly (src/scalar/quant_ref.c), by the same fp32 operations:
//   - amax: the largest |x| (the sign bit cleared, exact); max_ps(|x|, m)
//     keeps m when |x| is NaN, as the reference's a > amax ? a : amax;
//   - id = 127 / amax (0 when amax is 0) and d = amax / 127, one fp32
//     division each;
//   - q = x * id rounded to the nearest integer, ties to even (vcvtps2dq
//     in the default rounding mode, as nearbyintf); |q| <= 127, so the
//     narrowing to int8 and the integer sums are exact.
#include "avx512/quant.h"

// The largest |x_i| of n (a multiple of 16) values.
static float amax_of(const float *x, size_t n)
{
    __m512 m = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16)
        m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
    return mhsa_hmax__avx512(m);
}

// 16 values times id, rounded, as int32; their int8 form stored at q.
Q512_INLINE __m512i round16(const float *x, __m512 id, int8_t *q)
{
    __m512i v = q512_cvt_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), id));
    _mm_storeu_si128((__m128i *)q, q512_cvt_epi8(v));
    return v;
}

Q512_INLINE float inv_scale(float amax)
{
    return amax != 0.0f ? 127.0f / amax : 0.0f;
}

void mhsa_qquantize_32__avx512(size_t n, const float *x, void *dst)
{
    mhsa_q8_32 *b = dst;
    for (size_t i = 0; i < n / 32; i++, x += 32, b++) {
        float amax = amax_of(x, 32);
        __m512 id = _mm512_set1_ps(inv_scale(amax));
        __m512i q0 = round16(x, id, b->q), q1 = round16(x + 16, id, b->q + 16);
        b->d = mhsa_q8_32_scale(amax);
        b->s = q512_hsum_epi32(_mm512_add_epi32(q0, q1));
    }
}

void mhsa_qquantize_256__avx512(size_t n, const float *x, void *dst)
{
    mhsa_q8_256 *b = dst;
    for (size_t i = 0; i < n / 256; i++, x += 256, b++) {
        float amax = amax_of(x, 256);
        __m512 id = _mm512_set1_ps(inv_scale(amax));
        for (int j = 0; j < 16; j++) {
            __m512i q = round16(x + 16 * j, id, b->q + 16 * j);
            b->bsum[j] = (int16_t)q512_hsum_epi32(q);
        }
        b->d = amax / 127.0f;
    }
}

const mhsa_qkernels mhsa_qkernels_avx512 = {
    .name = "avx512-vnni",
    .quantize = { mhsa_qquantize_32__avx512, mhsa_qquantize_256__avx512 },
    .qmm = {
        [MHSA_Q8_0] = mhsa_qmm_q8_0__avx512,
        [MHSA_Q4_0] = mhsa_qmm_q4_0__avx512,
        [MHSA_Q4_1] = mhsa_qmm_q4_1__avx512,
        [MHSA_Q5_0] = mhsa_qmm_q5_0__avx512,
        [MHSA_Q5_1] = mhsa_qmm_q5_1__avx512,
        [MHSA_Q4_K] = mhsa_qmm_q4_k__avx512,
        [MHSA_Q5_K] = mhsa_qmm_q5_k__avx512,
        [MHSA_Q6_K] = mhsa_qmm_q6_k__avx512,
    },
    .qmm16 = {
        [MHSA_Q8_0] = mhsa_qmm16_q8_0__avx512,
        [MHSA_Q4_0] = mhsa_qmm16_q4_0__avx512,
        [MHSA_Q4_1] = mhsa_qmm16_q4_1__avx512,
        [MHSA_Q5_0] = mhsa_qmm16_q5_0__avx512,
        [MHSA_Q5_1] = mhsa_qmm16_q5_1__avx512,
        [MHSA_Q4_K] = mhsa_qmm16_q4_k__avx512,
        [MHSA_Q5_K] = mhsa_qmm16_q5_k__avx512,
        [MHSA_Q6_K] = mhsa_qmm16_q6_k__avx512,
    },
};
