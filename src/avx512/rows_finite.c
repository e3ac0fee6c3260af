// rows_finite.c — AVX-512 test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite); how, and why it is scalar's answer:
// src/kernels/vrow_body.h.
#include "kernels/kernels.h"
#include "avx512/vrow.h"

int mhsa_rows_finite__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld)
{
    return vr_rows_finite(rows, cols, x, ld);
}
