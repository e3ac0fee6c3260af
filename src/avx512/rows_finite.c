// rows_finite.c — AVX-512 test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite). x * 0 is NaN exactly when x is inf or NaN
// (+-0 for every finite x, subnormals too, whatever FTZ/DAZ say), and a
// sum of +-0 stays +-0 while a NaN stays NaN: so one FMA a vector,
// acc = x * 0 + acc, with the load folded into it, where the bit test
// (and, add, or) took three integer operations. Four accumulators cover
// the FMA's latency; a masked tail (masked-off lanes load as 0, a finite
// value, and are never read) so nothing past a row's cols is touched.
// The answer is scalar's for every input, NaN payloads and subnormals
// included: only whether some lane went NaN is read.
#include "avx512/avx512.h"
#include "avx512/vmath.h"

int mhsa_rows_finite__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    const __m512 zero = _mm512_setzero_ps();
    __m512 a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        size_t c = 0;
        for (; c + 64 <= cols; c += 64) {
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c), zero, a0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c + 16), zero, a1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c + 32), zero, a2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c + 48), zero, a3);
        }
        for (; c + 16 <= cols; c += 16)
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(row + c), zero, a0);
        if (c < cols)
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(
                                     mhsa_mask16__avx512(cols - c), row + c),
                                 zero, a1);
    }
    __m512 a = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
    return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) == 0;
}
