// gemv_n.c — scalar y = beta*y + A x over fp32 rows (contract in kernels.h).
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
