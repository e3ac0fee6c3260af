// gemv_n.c — AVX-512 y = beta*y + A x over fp32 rows (contract in
// kernels.h; the tiles and the bits: vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"

// y[j] = beta*y[j] + a[j,:] . x: the one-row fp32 dot, four rows of a at a
// time (four independent FMA chains hide the FMA latency).
void mhsa_gemv_n__avx512(size_t n, size_t d, const float *a, size_t lda,
                         const float *x, float *y, float beta)
{
    for (size_t j = 0; j < n; j += 4) {
        size_t nk = n - j < 4 ? n - j : 4;
        float s[4];
        if (nk == 4)
            dot_block(1, 4, d, x, 0, a + j * lda, lda, MHSA_F32, s, 0);
        else
            for (size_t t = 0; t < nk; t++)
                dot_block(1, 1, d, x, 0, a + (j + t) * lda, lda, MHSA_F32,
                          s + t, 0);
        for (size_t t = 0; t < nk; t++)
            y[j + t] = beta == 0.0f ? s[t] : beta * y[j + t] + s[t];
    }
}
