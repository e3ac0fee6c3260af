// convert.c — AVX-512 conversions between fp32 and the KV cache's 16-bit
// storage types, 16 values per step with masked tails; bit for bit the
// scalar reference of half.h (kernels.h gives the rules).
//  - F16: vcvtps2ph / vcvtph2ps (round to nearest even, F16 subnormals,
//    NaN made quiet with its sign and top payload bits: exactly half.h;
//    from F16, NaN lanes are rebuilt from the bits, since the instruction
//    would make a signalling NaN quiet and the contract keeps it exact).
//  - BF16: no AVX512_BF16 is assumed (F/BW/VL/DQ only), so rounding is
//    integer arithmetic on the bits, as in half.h: (u + 0x7fff + lsb) >> 16,
//    NaN -> (u >> 16) | 0x0040; narrowed by vpmovdw. bf16 -> fp32 is a
//    16-bit shift.
#include <string.h>

#include "avx512/avx512.h"
#include "avx512/vmath.h"

// 16 floats to bf16 bits (as 16-bit lanes of a ymm).
MHSA_AVX512_INLINE __m256i to_bf16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i mag = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32(0x7f800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16),
                                   _mm512_set1_epi32(1));
    __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb),
        16);
    __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16),
                                    _mm512_set1_epi32(0x0040));
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

void mhsa_cvt_from_f32__avx512(size_t n, const float *src, void *dst,
                               mhsa_dtype dt)
{
    if (dt == MHSA_F32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    uint16_t *h = dst;
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = mhsa_mask16__avx512(n - i);
        __m512 x = _mm512_maskz_loadu_ps(mk, src + i);
        __m256i v = dt == MHSA_F16
                  ? _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT |
                                           _MM_FROUND_NO_EXC)
                  : to_bf16(x);
        _mm256_mask_storeu_epi16(h + i, mk, v);
    }
}

void mhsa_cvt_to_f32__avx512(size_t n, const void *src, mhsa_dtype dt,
                             float *dst)
{
    if (dt == MHSA_F32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = mhsa_mask16__avx512(n - i);
        __m512 y = mhsa_load_as_f32__avx512(src, i, dt, mk);
        __mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
        if (dt == MHSA_F16 && nan) {
            // vcvtph2ps makes a signalling NaN quiet; the contract keeps
            // every F16 value exact, so NaN lanes are rebuilt from their
            // bits: sign, all-ones exponent, payload << 13 (as half.h).
            __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(
                mk, (const uint16_t *)src + i));
            __m512i sign = _mm512_slli_epi32(
                _mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
            __m512i pay = _mm512_slli_epi32(
                _mm512_and_si512(h, _mm512_set1_epi32(0x3ff)), 13);
            __m512i bits = _mm512_or_si512(
                _mm512_or_si512(sign, pay), _mm512_set1_epi32(0x7f800000));
            y = _mm512_mask_mov_ps(y, nan, _mm512_castsi512_ps(bits));
        }
        _mm512_mask_storeu_ps(dst + i, mk, y);
    }
}
