// scale_copy.c — AVX-512 row copy with scale (the row of the split/merge
// permute, src/attn/permute.c): 16 floats per step, and a masked tail so
// nothing past n is read or written. scale == 1 is a plain load/store,
// which moves the bits unchanged (NaN payloads included).
#include "avx512/avx512.h"
#include "avx512/vmath.h"

static void copy_row(size_t n, const float *s, float *d)
{
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(d + j, _mm512_loadu_ps(s + j));
    if (j < n) {
        __mmask16 mk = mhsa_mask16__avx512(n - j);
        _mm512_mask_storeu_ps(d + j, mk, _mm512_maskz_loadu_ps(mk, s + j));
    }
}

static void scale_row(size_t n, const float *s, float *d, __m512 sc)
{
    size_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(d + j, _mm512_mul_ps(sc, _mm512_loadu_ps(s + j)));
    if (j < n) {
        __mmask16 mk = mhsa_mask16__avx512(n - j);
        __m512 v = _mm512_maskz_loadu_ps(mk, s + j);
        _mm512_mask_storeu_ps(d + j, mk, _mm512_mul_ps(sc, v));
    }
}

void mhsa_scale_copy__avx512(size_t n, const float *src, float *dst,
                             float scale)
{
    if (scale == 1.0f)
        copy_row(n, src, dst);
    else
        scale_row(n, src, dst, _mm512_set1_ps(scale));
}
