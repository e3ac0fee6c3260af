// gemv.c — scalar matrix-vector products (contracts in kernels.h).
#include "kernels.h"
#include "scalar/scalar.h"

void mhsa_gemv_n__scalar(size_t n, size_t d, const float *a, size_t lda,
                         const float *x, float *y, float beta)
{
    for (size_t j = 0; j < n; j++) {
        const float *row = a + j * lda;
        float sum = 0.0f;
        for (size_t i = 0; i < d; i++)
            sum += row[i] * x[i];
        y[j] = beta == 0.0f ? sum : beta * y[j] + sum;
    }
}

void mhsa_gemv_t__scalar(size_t n, size_t d, const float *p, const float *a,
                         size_t lda, float *y)
{
    for (size_t j = 0; j < n; j++) {
        const float *row = a + j * lda;
        float pj = p[j];
        for (size_t i = 0; i < d; i++)
            y[i] += pj * row[i];
    }
}
