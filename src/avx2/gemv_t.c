// gemv_t.c — AVX2/FMA y += p A for one-row work (decoding one token),
// streaming A once, unpacked (contract in kernels.h).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

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
