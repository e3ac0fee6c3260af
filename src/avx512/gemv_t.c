// gemv_t.c — AVX-512 y += p A over fp32 rows (contract in kernels.h; the
// tiles and the bits: vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"

// y[i] += sum_j p[j] a[j, i]: the one-row fp32 accumulation; y is held in
// registers 64 columns at a time while the rows stream past.
void mhsa_gemv_t__avx512(size_t n, size_t d, const float *p,
                         const float *a, size_t lda, float *y)
{
    acc_rows(1, n, d, p, 0, a, lda, MHSA_F32, y, 0);
}
