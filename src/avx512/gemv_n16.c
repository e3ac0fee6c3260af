// gemv_n16.c — AVX-512 y = beta*y + A x over F16 / BF16 rows (contract in
// kernels.h): gemv_n's plan and tile (kernels/gemv_plan.h, vgemv.h) with
// each chunk widened in registers (vcvtph2ps; BF16 by a 16-bit shift), so
// a row has the bits of gemv_n on that row widened to fp32.
#include "kernels/kernels.h"
#include "avx512/avx512.h"
#include "avx512/vgemv.h"

void mhsa_gemv_n16__avx512(size_t n, size_t d, const void *a, size_t lda,
                           mhsa_dtype dt, const float *x, float *y,
                           float beta)
{
    // dt a constant in each call, so each dtype gets its own loops
    if (dt == MHSA_F16)
        mhsa_gemv_plan(gemv_rows, n, d, a, 2 * lda, MHSA_F16, x, y, beta);
    else
        mhsa_gemv_plan(gemv_rows, n, d, a, 2 * lda, MHSA_BF16, x, y, beta);
}
