// sgemm_6x16.c — the AVX2+FMA 6x16 micro-kernel.
//
// Register budget (16 ymm): 12 accumulators (6 rows x 2 halves of 16
// columns) + 2 for the B row + 1 for the broadcast A element = 15. Each
// depth step is 2 loads, 6 broadcasts and 12 FMAs; each C element sums its
// k products in order with one rounding per FMA.
//
// Full tiles load and store C directly. Edge tiles (m < 6 or n < 16) write
// only rows < m and, through masked loads/stores, columns < n; beta == 0
// never loads C, so NaN there cannot leak in.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

enum { MR = 6, NR = 16 };

// One row of C from its two accumulators. full: all 16 columns, no masks.
static inline void store_row(float *c, __m256 lo, __m256 hi, float beta,
                             int full, __m256i m0, __m256i m1)
{
    if (beta != 0.0f) {
        __m256 c0 = full ? _mm256_loadu_ps(c) : _mm256_maskload_ps(c, m0);
        __m256 c1 = full ? _mm256_loadu_ps(c + 8)
                         : _mm256_maskload_ps(c + 8, m1);
        if (beta == 1.0f) {
            lo = _mm256_add_ps(c0, lo);
            hi = _mm256_add_ps(c1, hi);
        } else {
            __m256 vb = _mm256_set1_ps(beta);
            lo = _mm256_fmadd_ps(vb, c0, lo);
            hi = _mm256_fmadd_ps(vb, c1, hi);
        }
    }
    if (full) {
        _mm256_storeu_ps(c, lo);
        _mm256_storeu_ps(c + 8, hi);
    } else {
        _mm256_maskstore_ps(c, m0, lo);
        _mm256_maskstore_ps(c + 8, m1, hi);
    }
}

void mhsa_sgemm_6x16__avx2(size_t k, const float *ap, const float *bp,
                           float *c, size_t ldc, size_t m, size_t n,
                           float beta)
{
    if (m == 0 || n == 0)
        return;
    __m256 acc0_lo = _mm256_setzero_ps(), acc0_hi = _mm256_setzero_ps();
    __m256 acc1_lo = _mm256_setzero_ps(), acc1_hi = _mm256_setzero_ps();
    __m256 acc2_lo = _mm256_setzero_ps(), acc2_hi = _mm256_setzero_ps();
    __m256 acc3_lo = _mm256_setzero_ps(), acc3_hi = _mm256_setzero_ps();
    __m256 acc4_lo = _mm256_setzero_ps(), acc4_hi = _mm256_setzero_ps();
    __m256 acc5_lo = _mm256_setzero_ps(), acc5_hi = _mm256_setzero_ps();

    // Warm the C rows we will write while the k loop runs.
    for (size_t i = 0; i < m; i++)
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);

    for (size_t kk = 0; kk < k; kk++) {
        const float *a = ap + kk * MR, *b = bp + kk * NR;
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        __m256 b_lo = _mm256_loadu_ps(b), b_hi = _mm256_loadu_ps(b + 8);
        __m256 ai;
        ai = _mm256_broadcast_ss(a + 0);
        acc0_lo = _mm256_fmadd_ps(ai, b_lo, acc0_lo);
        acc0_hi = _mm256_fmadd_ps(ai, b_hi, acc0_hi);
        ai = _mm256_broadcast_ss(a + 1);
        acc1_lo = _mm256_fmadd_ps(ai, b_lo, acc1_lo);
        acc1_hi = _mm256_fmadd_ps(ai, b_hi, acc1_hi);
        ai = _mm256_broadcast_ss(a + 2);
        acc2_lo = _mm256_fmadd_ps(ai, b_lo, acc2_lo);
        acc2_hi = _mm256_fmadd_ps(ai, b_hi, acc2_hi);
        ai = _mm256_broadcast_ss(a + 3);
        acc3_lo = _mm256_fmadd_ps(ai, b_lo, acc3_lo);
        acc3_hi = _mm256_fmadd_ps(ai, b_hi, acc3_hi);
        ai = _mm256_broadcast_ss(a + 4);
        acc4_lo = _mm256_fmadd_ps(ai, b_lo, acc4_lo);
        acc4_hi = _mm256_fmadd_ps(ai, b_hi, acc4_hi);
        ai = _mm256_broadcast_ss(a + 5);
        acc5_lo = _mm256_fmadd_ps(ai, b_lo, acc5_lo);
        acc5_hi = _mm256_fmadd_ps(ai, b_hi, acc5_hi);
    }

    size_t nn = n < NR ? n : NR;
    int full = m >= MR && nn == NR;
    __m256i m0 = mhsa_tail_mask__avx2(nn);
    __m256i m1 = mhsa_tail_mask__avx2(nn > 8 ? nn - 8 : 0);
    store_row(c, acc0_lo, acc0_hi, beta, full, m0, m1);
    if (m > 1)
        store_row(c + 1 * ldc, acc1_lo, acc1_hi, beta, full, m0, m1);
    if (m > 2)
        store_row(c + 2 * ldc, acc2_lo, acc2_hi, beta, full, m0, m1);
    if (m > 3)
        store_row(c + 3 * ldc, acc3_lo, acc3_hi, beta, full, m0, m1);
    if (m > 4)
        store_row(c + 4 * ldc, acc4_lo, acc4_hi, beta, full, m0, m1);
    if (m > 5)
        store_row(c + 5 * ldc, acc5_lo, acc5_hi, beta, full, m0, m1);
}
