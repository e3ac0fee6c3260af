// gemv_n.c — AVX2/FMA y = beta*y + A x for one-row work (decoding one
// token), streaming A once, unpacked (contract in kernels.h).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

// y[j] = beta*y[j] + a[j,:] . x, four rows at a time: 4 independent FMA
// chains hide the FMA latency while the loads stream the rows.
void mhsa_gemv_n__avx2(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta)
{
    size_t d8 = d & ~(size_t)7;
    __m256i tail = mhsa_tail_mask__avx2(d - d8);
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float *r0 = a + j * lda, *r1 = r0 + lda, *r2 = r1 + lda,
                    *r3 = r2 + lda;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
        for (size_t i = 0; i < d8; i += 8) {
            __m256 xv = _mm256_loadu_ps(x + i);
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + i), xv, acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + i), xv, acc1);
            acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + i), xv, acc2);
            acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + i), xv, acc3);
        }
        if (d8 < d) {
            __m256 xv = _mm256_maskload_ps(x + d8, tail);
            acc0 = _mm256_fmadd_ps(_mm256_maskload_ps(r0 + d8, tail), xv, acc0);
            acc1 = _mm256_fmadd_ps(_mm256_maskload_ps(r1 + d8, tail), xv, acc1);
            acc2 = _mm256_fmadd_ps(_mm256_maskload_ps(r2 + d8, tail), xv, acc2);
            acc3 = _mm256_fmadd_ps(_mm256_maskload_ps(r3 + d8, tail), xv, acc3);
        }
        float s[4] = { mhsa_hsum_ps__avx2(acc0), mhsa_hsum_ps__avx2(acc1),
                       mhsa_hsum_ps__avx2(acc2), mhsa_hsum_ps__avx2(acc3) };
        for (int q = 0; q < 4; q++)
            y[j + q] = beta == 0.0f ? s[q] : beta * y[j + q] + s[q];
    }
    for (; j < n; j++) {
        const float *r0 = a + j * lda;
        __m256 acc0 = _mm256_setzero_ps();
        for (size_t i = 0; i < d8; i += 8)
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + i),
                                   _mm256_loadu_ps(x + i), acc0);
        if (d8 < d)
            acc0 = _mm256_fmadd_ps(_mm256_maskload_ps(r0 + d8, tail),
                                   _mm256_maskload_ps(x + d8, tail), acc0);
        float s = mhsa_hsum_ps__avx2(acc0);
        y[j] = beta == 0.0f ? s : beta * y[j] + s;
    }
}
