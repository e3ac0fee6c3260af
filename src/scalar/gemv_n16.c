// gemv_n16.c — scalar y = beta*y + A x over F16 / BF16 rows (contract in
// kernels.h): each element widened as it is read, each row summed in order.
#include "kernels/half.h"
#include "scalar/scalar.h"

void mhsa_gemv_n16__scalar(size_t n, size_t d, const void *a, size_t lda,
                           mhsa_dtype dt, const float *x, float *y,
                           float beta)
{
    for (size_t j = 0; j < n; j++) {
        const void *row = (const uint16_t *)a + j * lda;
        float sum = 0.0f;
        for (size_t i = 0; i < d; i++)
            sum += mhsa_load_as_f32(row, i, dt) * x[i];
        y[j] = beta == 0.0f ? sum : beta * y[j] + sum;
    }
}
