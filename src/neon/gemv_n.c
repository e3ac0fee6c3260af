// gemv_n.c — NEON y = beta*y + A x for one-row work (decoding one
// token), streaming A once, unpacked (contract in kernels.h; the plan:
// src/kernels/gemv_plan.h, the tile and its bits: src/neon/vgemv.h).
#include "kernels/kernels.h"
#include "neon/neon.h"
#include "neon/vgemv.h"

void mhsa_gemv_n__neon(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta)
{
    mhsa_gemv_plan(mhsa_gemv_rows__neon, n, d, (const char *)a,
                   lda * sizeof(float), MHSA_F32, x, y, beta);
}
