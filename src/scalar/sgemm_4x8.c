// sgemm_4x8.c — the scalar 4x8 micro-kernel. 32 accumulators in locals; the
// compiler keeps them in registers and may vectorise the j loop with SSE2,
// which does not change the result (no contraction: -ffp-contract=off).
#include "kernels/kernels.h"
#include "scalar/scalar.h"

void mhsa_sgemm_4x8__scalar(size_t k, const float *ap, const float *bp,
                            float *c, size_t ldc, size_t m, size_t n,
                            float beta)
{
    enum { MR = 4, NR = 8 };
    float acc[MR][NR] = {{0}};
    for (size_t kk = 0; kk < k; kk++) {
        const float *a = ap + kk * MR, *b = bp + kk * NR;
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                acc[i][j] += a[i] * b[j];
    }
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        if (beta == 0.0f)
            for (size_t j = 0; j < n; j++)
                ci[j] = acc[i][j];
        else if (beta == 1.0f)
            for (size_t j = 0; j < n; j++)
                ci[j] += acc[i][j];
        else
            for (size_t j = 0; j < n; j++)
                ci[j] = beta * ci[j] + acc[i][j];
    }
}
