// kv_acc.c — scalar decode accumulation over cached V rows of any storage
// type (contract in kernels.h): each element converted as it is read, sums
// in the order of gemv_t.
#include "kernels/half.h"
#include "scalar/scalar.h"

void mhsa_kv_acc__scalar(size_t m, size_t n, size_t d, const float *p,
                         size_t ldp, const void *v, size_t ldv, mhsa_dtype dt,
                         float *o, size_t ldo)
{
    size_t es = mhsa_dtype_size(dt);
    for (size_t j = 0; j < n; j++) {
        const void *row = (const char *)v + j * ldv * es;
        for (size_t r = 0; r < m; r++) {
            float pj = p[r * ldp + j];
            float *orow = o + r * ldo;
            for (size_t i = 0; i < d; i++)
                orow[i] += pj * mhsa_load_as_f32(row, i, dt);
        }
    }
}
