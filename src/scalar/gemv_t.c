// gemv_t.c — scalar y += p A over fp32 rows (contract in kernels.h).
#include "scalar/scalar.h"

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
