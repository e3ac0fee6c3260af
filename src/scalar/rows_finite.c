// rows_finite.c — scalar test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite), the reference of the SIMD ones.
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "scalar/scalar.h"

int mhsa_rows_finite__scalar(size_t rows, size_t cols, const float *x,
                             size_t ld)
{
    // Contiguous rows are one long row: at dh = 8 the per-row loop setup
    // cost more than the test (docs/performance.md, "Measurements behind
    // the code").
    if (ld == cols) {
        cols *= rows;
        rows = 1;
    }
    // On the bits, OR-reduced without an early exit, so the compiler
    // vectorises it (a scalar isfinite() per element cost as much as a
    // fifth of the forward): (u & exponent) + its lowest bit reaches bit
    // 31 only when the exponent is all ones (inf or NaN); an and, an add
    // and an or per element.
    uint32_t bad = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        for (size_t c = 0; c < cols; c++) {
            uint32_t u;
            memcpy(&u, row + c, sizeof u);
            bad |= (u & 0x7f800000u) + 0x00800000u;
        }
    }
    return !(bad & 0x80000000u);
}
