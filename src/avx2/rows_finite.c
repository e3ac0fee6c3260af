// rows_finite.c — AVX2 test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite). x * 0 is NaN exactly when x is inf or NaN
// (+-0 for every finite x, subnormals too, whatever FTZ/DAZ say), and a
// sum of +-0 stays +-0 while a NaN stays NaN: so one FMA a vector,
// acc = x * 0 + acc, with the load folded into it, where the bit test
// (and, add, or) took three integer operations. Four accumulators cover
// the FMA's latency; a masked tail (masked-off lanes load as 0, a finite
// value) so nothing past a row's cols is read. The answer is scalar's
// for every input, NaN payloads and subnormals included: only whether
// some lane went NaN is read.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

int mhsa_rows_finite__avx2(size_t rows, size_t cols, const float *x,
                           size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    const __m256 zero = _mm256_setzero_ps();
    __m256 a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        size_t c = 0;
        for (; c + 32 <= cols; c += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), zero, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), zero, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 16), zero, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 24), zero, a3);
        }
        for (; c + 8 <= cols; c += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), zero, a0);
        if (c < cols)
            a1 = _mm256_fmadd_ps(_mm256_maskload_ps(
                                     row + c, mhsa_tail_mask__avx2(cols - c)),
                                 zero, a1);
    }
    __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    return _mm256_movemask_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)) == 0;
}
