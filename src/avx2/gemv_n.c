// gemv_n.c — AVX2/FMA y = beta*y + A x for one-row work (decoding one
// token), streaming A once, unpacked (contract in kernels.h; the plan:
// src/kernels/gemv_plan.h, the tile and its bits: src/avx2/vgemv.h).
#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vgemv.h"

void mhsa_gemv_n__avx2(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta)
{
    mhsa_gemv_plan(mhsa_gemv_rows__avx2, n, d, (const char *)a,
                   lda * sizeof(float), MHSA_F32, x, y, beta);
}
