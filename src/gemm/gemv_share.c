// gemv_share.c — one thread's share of a one-row product (gemv_share.h).
#include <omp.h>
#include <string.h>

#include "gemv_share.h"

void mhsa__rows_share(size_t n, size_t g, size_t *lo, size_t *hi)
{
    size_t t = (size_t)omp_get_thread_num();
    size_t nt = (size_t)omp_get_num_threads();
    size_t groups = (n + g - 1) / g;
    size_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
    *lo = g0 * g < n ? g0 * g : n;
    *hi = g1 * g < n ? g1 * g : n;
}

void mhsa__gemv_my_rows(size_t n, size_t *lo, size_t *hi)
{
    mhsa__rows_share(n, 8, lo, hi);
}

void mhsa__gemv_share(const mhsa_kernels *k, size_t n, size_t d,
                      const void *w, mhsa_dtype wdt, const float *b, int acc,
                      const float *x, float *y, size_t *lo, size_t *hi)
{
    mhsa__gemv_my_rows(n, lo, hi);
    size_t r0 = *lo, m = *hi - *lo;
    if (!m)
        return;
    if (b)
        memcpy(y + r0, b + r0, m * sizeof(float));
    float beta = b || acc ? 1.0f : 0.0f;
    if (wdt == MHSA_F32)
        k->gemv_n(m, d, (const float *)w + r0 * d, d, x, y + r0, beta);
    else
        k->gemv_n16(m, d, (const char *)w + r0 * d * mhsa_dtype_size(wdt), d,
                    wdt, x, y + r0, beta);
}
