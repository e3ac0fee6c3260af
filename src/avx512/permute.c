// permute.c — AVX-512 strided 4-D copy with scale (split/merge heads). The
// innermost dimension is contiguous on both sides: 16 floats per step, and
// a masked tail so nothing past n3 is read or written. scale == 1 is a
// plain load/store, which moves the bits unchanged (NaN payloads included).
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

void mhsa_permute_4d__avx512(const mhsa_permute_args *a)
{
    __m512 sc = _mm512_set1_ps(a->scale);
    for (size_t i0 = 0; i0 < a->n0; i0++)
        for (size_t i1 = 0; i1 < a->n1; i1++)
            for (size_t i2 = 0; i2 < a->n2; i2++) {
                const float *s = a->src + i0 * a->src_s0 + i1 * a->src_s1
                               + i2 * a->src_s2;
                float *d = a->dst + i0 * a->dst_s0 + i1 * a->dst_s1
                         + i2 * a->dst_s2;
                if (a->scale == 1.0f)
                    copy_row(a->n3, s, d);
                else
                    scale_row(a->n3, s, d, sc);
            }
}
