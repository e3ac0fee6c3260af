// gemv_n16.c — NEON y = beta*y + A x over F16 / BF16 rows (contract in
// kernels.h): this ISA's kv_dot with one query row, 64 rows at a time.
// Kept as it was before gemv_n16 existed (same bits): the long-row tile of
// src/avx2/gemv_n16.c was measured on Zen 3 only, and no Arm machine
// was at hand to measure a shape of its own here.
#include "kernels/kernels.h"
#include "neon/neon.h"

void mhsa_gemv_n16__neon(size_t n, size_t d, const void *a, size_t lda,
                         mhsa_dtype dt, const float *x, float *y, float beta)
{
    enum { CH = 64 };
    for (size_t j0 = 0; j0 < n; j0 += CH) {
        size_t m = n - j0 < CH ? n - j0 : CH;
        float dot[CH];
        mhsa_kv_dot__neon(1, m, d, x, 0, (const char *)a + j0 * lda * 2, lda,
                          dt, dot, 1);
        for (size_t t = 0; t < m; t++)
            y[j0 + t] = beta == 0.0f ? dot[t] : beta * y[j0 + t] + dot[t];
    }
}
