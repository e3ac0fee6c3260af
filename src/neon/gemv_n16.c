// gemv_n16.c — NEON y = beta*y + A x over F16 / BF16 rows (contract in
// kernels.h): gemv_n's plan and tile (src/kernels/gemv_plan.h,
// src/neon/vgemv.h) with each chunk widened in registers (FCVTL; BF16 by
// a widening shift), so a row has the bits of gemv_n on that row widened
// to fp32.
#include "kernels/kernels.h"
#include "neon/neon.h"
#include "neon/vgemv.h"

void mhsa_gemv_n16__neon(size_t n, size_t d, const void *a, size_t lda,
                         mhsa_dtype dt, const float *x, float *y, float beta)
{
    // dt a constant in each call, so each dtype gets its own loops
    if (dt == MHSA_F16)
        mhsa_gemv_plan(mhsa_gemv_rows__neon, n, d, a, 2 * lda, MHSA_F16, x,
                       y, beta);
    else
        mhsa_gemv_plan(mhsa_gemv_rows__neon, n, d, a, 2 * lda, MHSA_BF16, x,
                       y, beta);
}
