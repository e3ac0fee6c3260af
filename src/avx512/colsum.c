// colsum.c — the AVX-512 bias-gradient sums (kernels.h: colsum_add), in
// scalar's order for every lane: src/kernels/vrow_body.h.
#include "kernels/kernels.h"
#include "avx512/vrow.h"

void mhsa_colsum_add__avx512(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc)
{
    vr_colsum_add(rows, cols, x, ld, acc);
}
