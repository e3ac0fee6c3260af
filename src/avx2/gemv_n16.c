// gemv_n16.c — AVX2/FMA/F16C y = beta*y + A x over a matrix whose rows are
// stored as F16 or BF16 (contract in kernels.h): the one-row product of a
// 16-bit weight matrix, decoding one token. The plan (several long
// sequential streams of whole rows) is src/kernels/gemv_plan.h's, the tile
// gemv_n's (src/avx2/vgemv.h) with each chunk widened in registers as it
// is read: F16 by vcvtph2ps, BF16 by a zero-extension and a shift. So a
// row has the bits of gemv_n on that row widened to fp32.
#include "kernels/kernels.h"
#include "avx2/avx2.h"
#include "avx2/vgemv.h"

void mhsa_gemv_n16__avx2(size_t n, size_t d, const void *a, size_t lda,
                         mhsa_dtype dt, const float *x, float *y, float beta)
{
    // dt a constant in each call, so each dtype gets its own loops
    if (dt == MHSA_F16)
        mhsa_gemv_plan(mhsa_gemv_rows__avx2, n, d, a, 2 * lda, MHSA_F16, x,
                       y, beta);
    else
        mhsa_gemv_plan(mhsa_gemv_rows__avx2, n, d, a, 2 * lda, MHSA_BF16, x,
                       y, beta);
}
