// avx512_probe.c — the probes of avx512_probe.h, built once per AVX-512
// build (native flags, or SIMDe with MHSA_AVX512_EMULATED); test-only.
#include "avx512/avx512.h"
#include "avx512/vmath.h"
#include "avx512_probe.h"

static void probe_exp(size_t n, const float *x, float *y)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = mhsa_mask16__avx512(n - i);
        __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
        _mm512_mask_storeu_ps(y + i, mk, mhsa_exp__avx512(v));
    }
}

static void probe_exp_nonpos(size_t n, const float *x, float *y)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 mk = mhsa_mask16__avx512(n - i);
        __m512 v = _mm512_maskz_loadu_ps(mk, x + i);
        _mm512_mask_storeu_ps(y + i, mk, mhsa_exp_nonpos__avx512(v));
    }
}

static void mask_loadu_ps(const float *src, uint16_t k, const float *p,
                          float *out)
{
    _mm512_storeu_ps(out, _mm512_mask_loadu_ps(_mm512_loadu_ps(src), k, p));
}

static void maskz_loadu_ps(uint16_t k, const float *p, float *out)
{
    _mm512_storeu_ps(out, _mm512_maskz_loadu_ps(k, p));
}

static void mask_storeu_ps(float *p, uint16_t k, const float *v)
{
    _mm512_mask_storeu_ps(p, k, _mm512_loadu_ps(v));
}

static void maskz_loadu_epi16(uint16_t k, const uint16_t *p, uint16_t *out)
{
    _mm256_storeu_si256((__m256i *)out, _mm256_maskz_loadu_epi16(k, p));
}

static void mask_storeu_epi16(uint16_t *p, uint16_t k, const uint16_t *v)
{
    _mm256_mask_storeu_epi16(p, k, _mm256_loadu_si256((const __m256i *)v));
}

static void cvtph_ps(const uint16_t *h, float *out)
{
    _mm512_storeu_ps(out,
                     _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h)));
}

static void cvtps_ph(const float *x, uint16_t *out)
{
    _mm256_storeu_si256((__m256i *)out,
                        _mm512_cvtps_ph(_mm512_loadu_ps(x),
                                        _MM_FROUND_TO_NEAREST_INT |
                                        _MM_FROUND_NO_EXC));
}

static void cvtepu16_epi32(const uint16_t *h, uint32_t *out)
{
    _mm512_storeu_si512(out, _mm512_cvtepu16_epi32(
                                 _mm256_loadu_si256((const __m256i *)h)));
}

static void cvtepi32_epi16(const uint32_t *x, uint16_t *out)
{
    _mm256_storeu_si256((__m256i *)out,
                        _mm512_cvtepi32_epi16(_mm512_loadu_si512(x)));
}

static void scalef_ps(const float *a, const float *b, float *out)
{
    _mm512_storeu_ps(out, _mm512_scalef_ps(_mm512_loadu_ps(a),
                                           _mm512_loadu_ps(b)));
}

static void shuffle_f32x4(const float *a, const float *b, int which,
                          float *out)
{
    __m512 va = _mm512_loadu_ps(a), vb = _mm512_loadu_ps(b);
    _mm512_storeu_ps(out, which ? _mm512_shuffle_f32x4(va, vb, 0xDD)
                                : _mm512_shuffle_f32x4(va, vb, 0x88));
}

static void mask_i32gather_ps(const float *src, uint16_t k,
                              const int32_t *idx, const float *base,
                              float *out)
{
    _mm512_storeu_ps(out, _mm512_mask_i32gather_ps(
                              _mm512_loadu_ps(src), k,
                              _mm512_loadu_si512(idx), base, 4));
}

const avx512_probes MHSA_KNAME(probes, MHSA_AVX512_SFX) = {
#if MHSA_AVX512_EMULATED
    .build = "SIMDe emulation",
#else
    .build = "native",
#endif
    .exp = probe_exp,
    .exp_nonpos = probe_exp_nonpos,
    .mask_loadu_ps = mask_loadu_ps,
    .maskz_loadu_ps = maskz_loadu_ps,
    .mask_storeu_ps = mask_storeu_ps,
    .maskz_loadu_epi16 = maskz_loadu_epi16,
    .mask_storeu_epi16 = mask_storeu_epi16,
    .cvtph_ps = cvtph_ps,
    .cvtps_ph = cvtps_ph,
    .cvtepu16_epi32 = cvtepu16_epi32,
    .cvtepi32_epi16 = cvtepi32_epi16,
    .scalef_ps = scalef_ps,
    .shuffle_f32x4 = shuffle_f32x4,
    .mask_i32gather_ps = mask_i32gather_ps,
};
