// gemv.c — scalar matrix-vector products (contracts in kernels.h).
#include "kernels/half.h"
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

// The decode products over cached K/V rows of any storage type: each
// element converted as it is read, sums in the order of gemv_n / gemv_t.
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
