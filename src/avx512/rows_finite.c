// rows_finite.c — AVX-512 test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite): the scalar kernel's bit test on 16 floats a
// step, a masked tail (masked-off lanes load as 0, a finite value, and
// are never read) so nothing past a row's cols is touched. Integer
// operations only: the answer is scalar's for every input, NaN payloads
// and subnormals included.
#include "avx512/avx512.h"
#include "avx512/vmath.h"

// bad | ((u & exponent) + its lowest bit): bit 31 of a lane is set once
// any of its values had an all-ones exponent (inf or NaN).
MHSA_AVX512_INLINE __m512i or_bad(__m512i bad, __m512 v)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    const __m512i low = _mm512_set1_epi32(0x00800000);
    __m512i u = _mm512_castps_si512(v);
    return _mm512_or_si512(bad,
                           _mm512_add_epi32(_mm512_and_si512(u, expo), low));
}

int mhsa_rows_finite__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    __m512i bad = _mm512_setzero_si512();
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        size_t c = 0;
        for (; c + 16 <= cols; c += 16)
            bad = or_bad(bad, _mm512_loadu_ps(row + c));
        if (c < cols)
            bad = or_bad(bad, _mm512_maskz_loadu_ps(
                                  mhsa_mask16__avx512(cols - c), row + c));
    }
    return _mm512_test_epi32_mask(bad, _mm512_set1_epi32(INT32_MIN)) == 0;
}
