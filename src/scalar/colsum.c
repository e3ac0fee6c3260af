// colsum.c — mhsa_colsum_add__scalar (kernels.h: colsum_add): the bias
// gradients' column sums acc[c] = acc[c] + x[0][c] + x[1][c] + ..., rows
// added in order, the reference the vector kernels match bit for bit.
//
// Columns go COLSUM_W at a time through a local array the compiler keeps
// in registers: written as acc[c] += ... over whole rows, every add would
// wait on the store of the row before (acc may alias x). The same adds in
// the same order either way.
#include "scalar/scalar.h"

enum { COLSUM_W = 32 };   // columns summed in registers at a time

static inline __attribute__((always_inline)) void
colsum_cols(size_t rows, size_t w, const float *x, size_t ld, float *acc)
{
    float s[COLSUM_W];
    for (size_t c = 0; c < w; c++)
        s[c] = acc[c];
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < w; c++)
            s[c] += x[r * ld + c];
    for (size_t c = 0; c < w; c++)
        acc[c] = s[c];
}

void mhsa_colsum_add__scalar(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc)
{
    size_t c0 = 0;
    for (; c0 + COLSUM_W <= cols; c0 += COLSUM_W)
        colsum_cols(rows, COLSUM_W, x + c0, ld, acc + c0);
    if (c0 < cols)
        colsum_cols(rows, cols - c0, x + c0, ld, acc + c0);
}
