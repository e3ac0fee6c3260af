// gemv_n.c — AVX-512 y = beta*y + A x over fp32 rows (contract in
// kernels.h; the plan: kernels/gemv_plan.h, the tile and the bits:
// vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"

void mhsa_gemv_n__avx512(size_t n, size_t d, const float *a, size_t lda,
                         const float *x, float *y, float beta)
{
    mhsa_gemv_plan(gemv_rows, n, d, (const char *)a, lda * sizeof(float),
                   MHSA_F32, x, y, beta);
}
