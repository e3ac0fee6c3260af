// convert.c — AVX2/F16C conversions between fp32 and the KV cache's
// storage types (contract in kernels.h), bit for bit the scalar versions
// of half.h (test_kernel_convert.c checks every rounding class):
//  - to F16: vcvtps2ph with the rounding mode in the immediate (nearest
//    even, whatever MXCSR says); it overflows to inf and keeps NaN sign
//    and top payload bits, made quiet, exactly as half.h;
//  - from F16: vcvtph2ps, exact, except that it makes a signalling NaN
//    quiet where half.h keeps the value as stored: such lanes (rare: only
//    an F16 signalling NaN written by someone else) get the quiet bit
//    cleared again;
//  - BF16 both ways in integer lanes: rounding is half.h's add of 0x7fff
//    plus the lowest kept bit; NaN is made quiet instead;
//  - 16 values per step, the last n % 8 through half.h, so nothing past n
//    is read or written.
#include <immintrin.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vhalf.h"

// Eight fp32 to BF16 (nearest even; NaN quiet with sign and payload top).
MHSA_AVX2_INLINE __m128i ps_to_bf16x8(__m256 v)
{
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                   _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb),
        16);
    __m256i nan = _mm256_cmpgt_epi32(
        _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
        _mm256_set1_epi32(0x7f800000));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16),
                                _mm256_set1_epi32(0x0040));
    r = _mm256_blendv_epi8(r, q, nan);
    // Every lane is <= 0xffff, so the unsigned-saturating pack is exact.
    return _mm_packus_epi32(_mm256_castsi256_si128(r),
                            _mm256_extracti128_si256(r, 1));
}

// Eight F16 values to fp32 exactly as half.h: vcvtph2ps, then signalling
// NaNs (exponent all ones, quiet bit clear, payload not 0) made signalling
// again.
MHSA_AVX2_INLINE __m256 f16x8_to_ps_exact(__m128i h)
{
    __m256 f = _mm256_cvtph_ps(h);
    __m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    __m128i snan = _mm_and_si128(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7c00)),
                                 _mm_cmplt_epi16(a, _mm_set1_epi16(0x7e00)));
    if (!_mm_movemask_epi8(snan))
        return f;
    __m256i quiet = _mm256_and_si256(_mm256_cvtepi16_epi32(snan),
                                     _mm256_set1_epi32(0x00400000));
    return _mm256_castsi256_ps(
        _mm256_andnot_si256(quiet, _mm256_castps_si256(f)));
}

// 16 values a step, then 8 once.
MHSA_AVX2_INLINE size_t cvt_f16_from_f32(size_t n, const float *src,
                                         uint16_t *h)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                    _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
        __m128i b = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8),
                                    _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(h + i), a);
        _mm_storeu_si128((__m128i *)(h + i + 8), b);
    }
    if (i + 8 <= n) {
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                         _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC));
        i += 8;
    }
    return i;
}

MHSA_AVX2_INLINE size_t cvt_bf16_from_f32(size_t n, const float *src,
                                          uint16_t *h)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(h + i),
                         ps_to_bf16x8(_mm256_loadu_ps(src + i)));
        _mm_storeu_si128((__m128i *)(h + i + 8),
                         ps_to_bf16x8(_mm256_loadu_ps(src + i + 8)));
    }
    if (i + 8 <= n) {
        _mm_storeu_si128((__m128i *)(h + i),
                         ps_to_bf16x8(_mm256_loadu_ps(src + i)));
        i += 8;
    }
    return i;
}

// Eight 16-bit values at h to fp32 at dst by cvt8, 16 a step, then 8 once.
#define CVT_TO_F32(n, h, dst, cvt8)                                           \
    do {                                                                      \
        size_t i_ = 0;                                                        \
        for (; i_ + 16 <= (n); i_ += 16) {                                    \
            __m128i a_ = _mm_loadu_si128((const __m128i *)((h) + i_));        \
            __m128i b_ = _mm_loadu_si128((const __m128i *)((h) + i_ + 8));    \
            _mm256_storeu_ps((dst) + i_, cvt8(a_));                           \
            _mm256_storeu_ps((dst) + i_ + 8, cvt8(b_));                       \
        }                                                                     \
        if (i_ + 8 <= (n)) {                                                  \
            _mm256_storeu_ps((dst) + i_, cvt8(_mm_loadu_si128(                \
                                             (const __m128i *)((h) + i_))));  \
            i_ += 8;                                                          \
        }                                                                     \
        return i_;                                                            \
    } while (0)

MHSA_AVX2_INLINE size_t cvt_f16_to_f32(size_t n, const uint16_t *h,
                                       float *dst)
{
    CVT_TO_F32(n, h, dst, f16x8_to_ps_exact);
}

MHSA_AVX2_INLINE size_t cvt_bf16_to_f32(size_t n, const uint16_t *h,
                                        float *dst)
{
    CVT_TO_F32(n, h, dst, mhsa_bf16x8_to_ps__avx2);
}

#include "kernels/convert_body.h"

MHSA_CVT_DEFINE(avx2)
