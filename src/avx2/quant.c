// quant.c — the AVX2 activation quantizers (kernels/quant.h: the scalar
// reference's bits exactly) and the set of AVX2 quantized products the
// table holds (avx2/quant.h; quant_32.c, quant_k.c).
//
// The scalar reference's operations lane by lane: amax the largest |x|
// (vmaxps against the running max, which keeps the max when x is NaN, as
// the reference's a > amax does), one fp32 division 127 / amax and d =
// amax / 127, each x * id rounded by vcvtps2dq in the current rounding
// mode (nearbyintf's), and the int32 truncated to its low byte, as the
// reference's conversion to int8_t does (|x id| <= 127 after rounding,
// so in range the truncation is exact). The sums s and bsum are integer
// sums of the q (vpsadbw on q + 128), exact.
#include "avx2/quant.h"
#include "avx2/vmath.h"

// The largest |x_i| of n (a multiple of 32) values, 0 if none is above 0.
static float amax_of(const float *x, size_t n)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m[4];
    for (int k = 0; k < 4; k++)
        m[k] = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 32)
        for (int k = 0; k < 4; k++)
            m[k] = _mm256_max_ps(
                _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 8 * k)), m[k]);
    __m256 v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]),
                             _mm256_max_ps(m[2], m[3]));
    return mhsa_hmax_ps__avx2(v);
}

// 32 values times id, rounded, as int8 in order.
static inline __m256i round32(const float *x, float id)
{
    const __m256 v = _mm256_set1_ps(id);
    const __m256i low = _mm256_set1_epi32(0xff);
    __m256i q[4];
    for (int k = 0; k < 4; k++)
        q[k] = _mm256_and_si256(
            _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), v)),
            low);
    // Per 128-bit lane the packs interleave the four sources a dword
    // (four values) at a time; the permutation restores the order.
    __m256i p = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]),
                                    _mm256_packus_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(p,
                                       _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3,
                                                         7));
}

// The sums of the int8 q over bytes [0, 16) and [16, 32).
static inline void sums16(__m256i q, int32_t *lo, int32_t *hi)
{
    __m256i t = _mm256_sad_epu8(
        _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)),
        _mm256_setzero_si256());
    t = _mm256_add_epi64(t, _mm256_srli_si256(t, 8));
    *lo = _mm256_cvtsi256_si32(t) - 16 * 128;
    *hi = _mm_cvtsi128_si32(_mm256_extracti128_si256(t, 1)) - 16 * 128;
}

void mhsa_qquantize_32__avx2(size_t n, const float *x, void *dst)
{
    mhsa_q8_32 *b = dst;
    for (size_t i = 0; i < n / 32; i++, x += 32, b++) {
        float amax = amax_of(x, 32);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        __m256i q = round32(x, id);
        _mm256_storeu_si256((__m256i *)b->q, q);
        b->d = mhsa_q8_32_scale(amax);
        int32_t lo, hi;
        sums16(q, &lo, &hi);
        b->s = lo + hi;
    }
}

void mhsa_qquantize_256__avx2(size_t n, const float *x, void *dst)
{
    mhsa_q8_256 *b = dst;
    for (size_t i = 0; i < n / 256; i++, x += 256, b++) {
        float amax = amax_of(x, 256);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        for (int k = 0; k < 8; k++) {
            __m256i q = round32(x + 32 * k, id);
            _mm256_storeu_si256((__m256i *)(b->q + 32 * k), q);
            int32_t lo, hi;
            sums16(q, &lo, &hi);
            b->bsum[2 * k] = (int16_t)lo;
            b->bsum[2 * k + 1] = (int16_t)hi;
        }
        b->d = amax / 127.0f;
    }
}

const mhsa_qkernels mhsa_qkernels_avx2 = {
    .name = "avx2",
    .quantize = { mhsa_qquantize_32__avx2, mhsa_qquantize_256__avx2 },
    .qmm = { mhsa_qmm_q8_0__avx2, mhsa_qmm_q4_0__avx2, mhsa_qmm_q4_1__avx2,
             mhsa_qmm_q5_0__avx2, mhsa_qmm_q5_1__avx2, mhsa_qmm_q4_k__avx2,
             mhsa_qmm_q5_k__avx2, mhsa_qmm_q6_k__avx2 },
};
