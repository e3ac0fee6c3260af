// gemv_n16.c — AVX2/FMA/F16C y = beta*y + A x over a matrix whose rows are
// stored as F16 or BF16 (contract in kernels.h): the one-row product of a
// 16-bit weight matrix, decoding one token. Weight rows are long (d 576 to
// 8192) and the matrix comes from L3 or DRAM, so the shape is the one that
// streams best from there, not kv_dot's (made for short cache rows, 8 rows
// side by side, which read a 16-bit matrix from DRAM at 0.55-0.7 of gemv_n's
// fp32 bytes per second on Zen 3):
//  - two rows at a time, 16 elements (32 bytes) of each per step, so each
//    row is read a whole line every two steps, in order;
//  - a software prefetch 2 KiB ahead of each row's position (within the
//    matrix): from DRAM 1.2-1.3x the speed without it on Zen 3 (AMD EPYC,
//    best of 30 over 60 matrices 1536 x 576 BF16, under load; 2 rows beat
//    4 rows there);
//  - F16 widened by vcvtph2ps, BF16 by a zero-extension and a shift.
// Bits: each row is two chains, the first 8 of every 16 elements and the
// second 8 (an odd 8 at the end joins the first, a masked tail the
// second), added and reduced by mhsa_hsum_ps__avx2 at the end; the same
// for a row whatever n is or which row it pairs with (test_kernel_gemv16).
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vhalf.h"
#include "avx2/vmath.h"

enum { PREFETCH_AHEAD = 2048 };   // bytes ahead of each row's position

// out[r] = row r . x for R (1 or 2, a constant) rows row_bytes apart at a;
// prefetches stay below lim (the end of the matrix's last row).
MHSA_AVX2_INLINE void rows16(size_t R, size_t d, const char *a,
                             size_t row_bytes, const char *lim, mhsa_dtype dt,
                             const float *x, float *out)
{
    __m256 lo[2], hi[2];
    for (size_t r = 0; r < R; r++)
        lo[r] = hi[r] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        for (size_t r = 0; r < R; r++) {
            const char *p = a + r * row_bytes + 2 * i + PREFETCH_AHEAD;
            if (p < lim)
                _mm_prefetch(p, _MM_HINT_T0);
        }
        __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        for (size_t r = 0; r < R; r++) {
            const char *row = a + r * row_bytes;
            lo[r] = _mm256_fmadd_ps(mhsa_load8_as_ps__avx2(row, i, dt), x0,
                                    lo[r]);
            hi[r] = _mm256_fmadd_ps(mhsa_load8_as_ps__avx2(row, i + 8, dt),
                                    x1, hi[r]);
        }
    }
    if (i + 8 <= d) {
        __m256 x0 = _mm256_loadu_ps(x + i);
        for (size_t r = 0; r < R; r++)
            lo[r] = _mm256_fmadd_ps(
                mhsa_load8_as_ps__avx2(a + r * row_bytes, i, dt), x0, lo[r]);
        i += 8;
    }
    if (i < d) {
        __m256i mk = mhsa_tail_mask__avx2(d - i);
        __m256 x0 = _mm256_maskload_ps(x + i, mk);
        for (size_t r = 0; r < R; r++)
            hi[r] = _mm256_fmadd_ps(
                mhsa_load_tail_as_ps__avx2(a + r * row_bytes, i, d - i, mk,
                                           dt),
                x0, hi[r]);
    }
    for (size_t r = 0; r < R; r++)
        out[r] = mhsa_hsum_ps__avx2(_mm256_add_ps(lo[r], hi[r]));
}

MHSA_AVX2_INLINE void gemv16(size_t n, size_t d, const char *a, size_t lda,
                             mhsa_dtype dt, const float *x, float *y,
                             float beta)
{
    size_t row_bytes = 2 * lda;
    const char *lim = a + (n - 1) * row_bytes + 2 * d;
    size_t j = 0;
    float s[2];
    for (; j + 2 <= n; j += 2) {
        rows16(2, d, a + j * row_bytes, row_bytes, lim, dt, x, s);
        for (size_t r = 0; r < 2; r++)
            y[j + r] = beta == 0.0f ? s[r] : beta * y[j + r] + s[r];
    }
    if (j < n) {
        rows16(1, d, a + j * row_bytes, row_bytes, lim, dt, x, s);
        y[j] = beta == 0.0f ? s[0] : beta * y[j] + s[0];
    }
}

void mhsa_gemv_n16__avx2(size_t n, size_t d, const void *a, size_t lda,
                         mhsa_dtype dt, const float *x, float *y, float beta)
{
    if (n == 0)
        return;
    if (dt == MHSA_F16)
        gemv16(n, d, a, lda, MHSA_F16, x, y, beta);
    else
        gemv16(n, d, a, lda, MHSA_BF16, x, y, beta);
}
