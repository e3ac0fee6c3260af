// rows_finite.c — AVX2 test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite): the scalar kernel's bit test on 8 floats a
// step, a masked tail (masked-off lanes load as 0, a finite value) so
// nothing past a row's cols is read. Integer operations only: the answer
// is scalar's for every input, NaN payloads and subnormals included.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

// bad | ((u & exponent) + its lowest bit): bit 31 of a lane is set once
// any of its values had an all-ones exponent (inf or NaN).
static inline __m256i or_bad(__m256i bad, __m256i u)
{
    const __m256i expo = _mm256_set1_epi32(0x7f800000);
    const __m256i low = _mm256_set1_epi32(0x00800000);
    return _mm256_or_si256(bad,
                           _mm256_add_epi32(_mm256_and_si256(u, expo), low));
}

int mhsa_rows_finite__avx2(size_t rows, size_t cols, const float *x,
                           size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    __m256i bad = _mm256_setzero_si256();
    for (size_t r = 0; r < rows; r++) {
        const int *row = (const int *)(x + r * ld);
        size_t c = 0;
        for (; c + 8 <= cols; c += 8)
            bad = or_bad(bad, _mm256_loadu_si256((const __m256i *)(row + c)));
        if (c < cols)
            bad = or_bad(bad, _mm256_maskload_epi32(
                                  row + c, mhsa_tail_mask__avx2(cols - c)));
    }
    return _mm256_movemask_ps(_mm256_castsi256_ps(bad)) == 0;
}
