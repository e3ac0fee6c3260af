// gemv.c — AVX2/FMA matrix-vector products for one-row work (decoding one
// token). Both stream the matrix once, unpacked; the work per element is
// one FMA, so they run at the speed of memory, not of the FMA units.
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

// y[i] += sum_j p[j] a[j, i]: y is held in registers 64 columns at a time
// (8 accumulators) while the rows stream past, so each row of a is read
// once for head sizes up to 64.
void mhsa_gemv_t__avx2(size_t n, size_t d, const float *p, const float *a,
                       size_t lda, float *y)
{
    size_t i = 0;
    for (; i + 64 <= d; i += 64) {
        __m256 acc[8];
        for (int q = 0; q < 8; q++)
            acc[q] = _mm256_loadu_ps(y + i + 8 * q);
        for (size_t j = 0; j < n; j++) {
            __m256 pj = _mm256_broadcast_ss(p + j);
            const float *row = a + j * lda + i;
            for (int q = 0; q < 8; q++)
                acc[q] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(row + 8 * q),
                                         acc[q]);
        }
        for (int q = 0; q < 8; q++)
            _mm256_storeu_ps(y + i + 8 * q, acc[q]);
    }
    for (; i < d; i += 8) {
        size_t w = d - i < 8 ? d - i : 8;
        __m256i m = mhsa_tail_mask__avx2(w);
        __m256 acc = _mm256_maskload_ps(y + i, m);
        for (size_t j = 0; j < n; j++)
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j),
                                  _mm256_maskload_ps(a + j * lda + i, m), acc);
        _mm256_maskstore_ps(y + i, m, acc);
    }
}
