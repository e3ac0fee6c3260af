// colsum.c — the AVX2 bias-gradient sums (kernels.h: colsum_add):
// acc[c] + x[0][c] + x[1][c] + ... in row order, 8 columns a lane vector
// and up to 8 vectors (64 columns) summed at once so the adds of one row
// do not wait on each other; the last vector masked. Each lane does the
// scalar loop's adds in its order: the same bits.
#include <immintrin.h>

#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vmath.h"

enum { VW = 8 };   // vectors of running sums at a time, at most

// One pass over nv (a constant in each instance, so the row loop is
// straight-line) vectors of columns from acc, x; the last has `last`.
static inline __attribute__((always_inline)) void
pass(size_t rows, size_t nv, const float *x, size_t ld, float *acc,
     __m256i last)
{
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 s[VW];
    for (size_t v = 0; v < nv; v++)
        s[v] = _mm256_maskload_ps(acc + 8 * v, v + 1 < nv ? all : last);
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        for (size_t v = 0; v + 1 < nv; v++)
            s[v] = _mm256_add_ps(s[v], _mm256_loadu_ps(row + 8 * v));
        s[nv - 1] = _mm256_add_ps(
            s[nv - 1], _mm256_maskload_ps(row + 8 * (nv - 1), last));
    }
    for (size_t v = 0; v < nv; v++)
        _mm256_maskstore_ps(acc + 8 * v, v + 1 < nv ? all : last, s[v]);
}

void mhsa_colsum_add__avx2(size_t rows, size_t cols, const float *x,
                           size_t ld, float *acc)
{
    for (size_t c0 = 0; c0 < cols; c0 += 8 * VW) {
        size_t w = cols - c0 < 8 * VW ? cols - c0 : 8 * VW;
        size_t nv = (w + 7) / 8;
        __m256i last = mhsa_tail_mask__avx2(w - 8 * (nv - 1));
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
