// kv_dot.c — scalar decode scores over cached K rows of any storage type
// (contract in kernels.h): each element converted as it is read, sums in
// the order of gemv_n.
#include "kernels/half.h"
#include "scalar/scalar.h"

void mhsa_kv_dot__scalar(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk, mhsa_dtype dt,
                         float *s, size_t lds)
{
    size_t es = mhsa_dtype_size(dt);
    for (size_t j = 0; j < n; j++) {
        const void *row = (const char *)k + j * ldk * es;
        for (size_t r = 0; r < m; r++) {
            const float *qr = q + r * ldq;
            float sum = 0.0f;
            for (size_t i = 0; i < d; i++)
                sum += mhsa_load_as_f32(row, i, dt) * qr[i];
            s[r * lds + j] = sum;
        }
    }
}
