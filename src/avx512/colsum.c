// colsum.c — the AVX-512 bias-gradient sums (kernels.h: colsum_add):
// acc[c] + x[0][c] + x[1][c] + ... in row order, 16 columns a lane vector
// and up to 8 vectors (128 columns) summed at once so the adds of one row
// do not wait on each other; a masked tail vector. Each lane does the
// scalar loop's adds in its order: the same bits.
#include "avx512/avx512.h"
#include "avx512/vmath.h"

enum { VW = 8 };   // vectors of running sums at a time

void mhsa_colsum_add__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc)
{
    for (size_t c0 = 0; c0 < cols; c0 += 16 * VW) {
        size_t w = cols - c0 < 16 * VW ? cols - c0 : 16 * VW;
        size_t nv = (w + 15) / 16;
        __mmask16 last = mhsa_mask16__avx512(w - 16 * (nv - 1));
        __m512 s[VW];
        for (size_t v = 0; v < nv; v++)
            s[v] = _mm512_maskz_loadu_ps(v + 1 < nv ? 0xffff : last,
                                         acc + c0 + 16 * v);
        for (size_t r = 0; r < rows; r++) {
            const float *row = x + r * ld + c0;
            for (size_t v = 0; v + 1 < nv; v++)
                s[v] = _mm512_add_ps(s[v], _mm512_loadu_ps(row + 16 * v));
            s[nv - 1] = _mm512_add_ps(
                s[nv - 1], _mm512_maskz_loadu_ps(last, row + 16 * (nv - 1)));
        }
        for (size_t v = 0; v < nv; v++)
            _mm512_mask_storeu_ps(acc + c0 + 16 * v,
                                  v + 1 < nv ? 0xffff : last, s[v]);
    }
}
