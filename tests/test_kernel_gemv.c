// test_kernel_gemv.c — gemv_n / gemv_t of every ISA against a double
// reference and against scalar: sizes around the vector widths and the
// unroll factors, odd leading dimensions, beta 0 (y poisoned) and 1,
// canaries after every buffer.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

static const size_t sizes[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32,
                                33, 63, 64, 65, 127, 129, 256, 301 };
enum { N_SIZES = sizeof sizes / sizeof sizes[0] };

static void check_gemv_n(const mhsa_kernels *k, size_t n, size_t d, float beta,
                         uint64_t seed)
{
    rng r = { seed };
    size_t lda = d + (seed % 3);
    float *a = alloc_guarded(n * lda), *x = alloc_guarded(d);
    float *y = alloc_guarded(n), *y0 = alloc_guarded(n);
    fill_uniform(&r, a, n * lda, -1, 1);
    fill_uniform(&r, x, d, -1, 1);
    fill_uniform(&r, y0, n, -1, 1);
    for (size_t j = 0; j < n; j++)
        y[j] = beta == 0.0f ? NAN : y0[j];
    k->gemv_n(n, d, a, lda, x, y, beta);
    for (size_t j = 0; j < n; j++) {
        double want = beta == 0.0f ? 0.0 : (double)beta * y0[j];
        double mag = 1.0;
        for (size_t i = 0; i < d; i++) {
            want += (double)a[j * lda + i] * x[i];
            mag += fabs((double)a[j * lda + i] * x[i]);
        }
        ck_assert_msg(fabs(y[j] - want) <= 4e-7 * mag * (1 + log2((double)d)),
                      "%s gemv_n n=%zu d=%zu beta=%g seed=%llu j=%zu: %g vs %g",
                      k->name, n, d, beta, (unsigned long long)seed, j, y[j],
                      want);
    }
    ck_assert_msg(guard_ok(a, n * lda) && guard_ok(x, d) && guard_ok(y, n),
                  "%s gemv_n n=%zu d=%zu wrote out of bounds", k->name, n, d);
    free_guarded(a);
    free_guarded(x);
    free_guarded(y);
    free_guarded(y0);
}

static void check_gemv_t(const mhsa_kernels *k, size_t n, size_t d,
                         uint64_t seed)
{
    rng r = { seed };
    size_t lda = d + (seed % 3);
    float *a = alloc_guarded(n * lda), *p = alloc_guarded(n);
    float *y = alloc_guarded(d), *y0 = alloc_guarded(d);
    fill_uniform(&r, a, n * lda, -1, 1);
    fill_uniform(&r, p, n, 0, 1);
    fill_uniform(&r, y0, d, -1, 1);
    for (size_t i = 0; i < d; i++)
        y[i] = y0[i];
    k->gemv_t(n, d, p, a, lda, y);
    for (size_t i = 0; i < d; i++) {
        double want = y0[i], mag = 1.0;
        for (size_t j = 0; j < n; j++) {
            want += (double)p[j] * a[j * lda + i];
            mag += fabs((double)p[j] * a[j * lda + i]);
        }
        ck_assert_msg(fabs(y[i] - want) <= 4e-7 * mag * (1 + log2((double)n)),
                      "%s gemv_t n=%zu d=%zu seed=%llu i=%zu: %g vs %g",
                      k->name, n, d, (unsigned long long)seed, i, y[i], want);
    }
    ck_assert_msg(guard_ok(a, n * lda) && guard_ok(p, n) && guard_ok(y, d),
                  "%s gemv_t n=%zu d=%zu wrote out of bounds", k->name, n, d);
    free_guarded(a);
    free_guarded(p);
    free_guarded(y);
    free_guarded(y0);
}

START_TEST(gemv_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    uint64_t seed = 1;
    for (int a = 0; a < N_SIZES; a++)
        for (int b = 0; b < N_SIZES; b++, seed++) {
            check_gemv_n(k, sizes[a], sizes[b], seed % 2 ? 1.0f : 0.0f, seed);
            check_gemv_t(k, sizes[a], sizes[b], seed);
        }
}
END_TEST

// Small integers: every product and partial sum is exact, so every ISA
// must give exactly the scalar result.
START_TEST(gemv_exact_on_small_integers)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    const mhsa_kernels *s = &mhsa_kernels_scalar;
    rng r = { 99 };
    for (int t = 0; t < 40; t++) {
        size_t n = (size_t)rng_int(&r, 1, 70), d = (size_t)rng_int(&r, 1, 140);
        float *a = malloc(n * d * 4), *x = malloc(d * 4), *p = malloc(n * 4);
        float *y1 = calloc(d > n ? d : n, 4), *y2 = calloc(d > n ? d : n, 4);
        fill_small_ints(&r, a, n * d, 4);
        fill_small_ints(&r, x, d, 4);
        fill_small_ints(&r, p, n, 4);
        k->gemv_n(n, d, a, d, x, y1, 0.0f);
        s->gemv_n(n, d, a, d, x, y2, 0.0f);
        for (size_t j = 0; j < n; j++)
            ck_assert_msg(y1[j] == y2[j], "%s gemv_n n=%zu d=%zu", k->name,
                          n, d);
        for (size_t i = 0; i < d; i++)
            y1[i] = y2[i] = (float)i;
        k->gemv_t(n, d, p, a, d, y1);
        s->gemv_t(n, d, p, a, d, y2);
        for (size_t i = 0; i < d; i++)
            ck_assert_msg(y1[i] == y2[i], "%s gemv_t n=%zu d=%zu", k->name,
                          n, d);
        free(a); free(x); free(p); free(y1); free(y2);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_gemv");
    TCase *tc = tcase_create("gemv");
    tcase_add_loop_test(tc, gemv_matches_reference, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv_exact_on_small_integers, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
