// colsum.c — the AVX-512 bias-gradient sums (kernels.h: colsum_add):
// acc[c] + x[0][c] + x[1][c] + ... in row order, 16 columns a lane vector
// and up to 8 vectors (128 columns) summed at once so the adds of one row
// do not wait on each other; the last vector masked. Each lane does the
// scalar loop's adds in its order: the same bits.
#include "avx512/avx512.h"
#include "avx512/vmath.h"

enum { VW = 8 };   // vectors of running sums at a time, at most

// One pass over nv (a constant in each instance, so the row loop is
// straight-line) vectors of columns from acc, x; the last has `last`.
MHSA_AVX512_INLINE void pass(size_t rows, size_t nv, const float *x,
                             size_t ld, float *acc, __mmask16 last)
{
    __m512 s[VW];
    for (size_t v = 0; v < nv; v++)
        s[v] = _mm512_maskz_loadu_ps(v + 1 < nv ? 0xffff : last,
                                     acc + 16 * v);
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        for (size_t v = 0; v < nv; v++)
            s[v] = _mm512_add_ps(s[v], _mm512_maskz_loadu_ps(
                                           v + 1 < nv ? 0xffff : last,
                                           row + 16 * v));
    }
    for (size_t v = 0; v < nv; v++)
        _mm512_mask_storeu_ps(acc + 16 * v, v + 1 < nv ? 0xffff : last,
                              s[v]);
}

void mhsa_colsum_add__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc)
{
    for (size_t c0 = 0; c0 < cols; c0 += 16 * VW) {
        size_t w = cols - c0 < 16 * VW ? cols - c0 : 16 * VW;
        size_t nv = (w + 15) / 16;
        __mmask16 last = mhsa_mask16__avx512(w - 16 * (nv - 1));
        switch (nv) {
#define PASS(n)                                                               \
    case n:                                                                   \
        pass(rows, n, x + c0, ld, acc + c0, last);                            \
        break;
            PASS(1) PASS(2) PASS(3) PASS(4) PASS(5) PASS(6) PASS(7) PASS(8)
#undef PASS
        }
    }
}
