// scale_copy.c — AVX2 row copy with scale (the row of the split/merge
// permute, src/attn/permute.c): 8 floats per step, and a masked tail so
// nothing past n is read or written. scale == 1 is a plain load/store,
// which moves the bits unchanged (NaN payloads included).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

static void copy_row(size_t n, const float *s, float *d)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(d + j, _mm256_loadu_ps(s + j));
    if (j < n) {
        __m256i mk = mhsa_tail_mask__avx2(n - j);
        _mm256_maskstore_ps(d + j, mk, _mm256_maskload_ps(s + j, mk));
    }
}

static void scale_row(size_t n, const float *s, float *d, __m256 sc)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(d + j, _mm256_mul_ps(sc, _mm256_loadu_ps(s + j)));
    if (j < n) {
        __m256i mk = mhsa_tail_mask__avx2(n - j);
        _mm256_maskstore_ps(d + j, mk,
                            _mm256_mul_ps(sc, _mm256_maskload_ps(s + j, mk)));
    }
}

void mhsa_scale_copy__avx2(size_t n, const float *src, float *dst,
                           float scale)
{
    if (scale == 1.0f)
        copy_row(n, src, dst);
    else
        scale_row(n, src, dst, _mm256_set1_ps(scale));
}
