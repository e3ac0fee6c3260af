// test_kernel_gemv16.c — gemv_n16 (y = beta*y + A x over F16 / BF16 rows,
// the one-row product of 16-bit weights) of every ISA against a double
// reference and against scalar: n and d of 1, primes and sizes either side
// of the vector widths and unrolls (8, 16) up to weight rows of 1536, odd
// leading dimensions, beta 0 (y poisoned with NaN, never read) and 1; the
// matrix allocated to exactly its last used element (ASan and valgrind see
// any read past it); exact sums on small integers; a row's bits the same
// whatever n is and whichever row it is paired with; the bits of gemv_n
// on the row widened to fp32 (16-bit subnormals, zeros, the largest
// values, NaN and inf among the elements; default and FTZ/DAZ state); NaN
// and +-inf in a row (and inf times 0) giving IEEE's results as scalar
// does.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fpenv.h"
#include "kernels/half.h"
#include "util.h"

static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16 };
static const char *const dt_names[] = { "f16", "bf16" };

static const size_t ns[] = { 1, 2, 3, 5, 7, 13, 64, 65 };
static const size_t ds[] = { 1,  2,  3,  7,  8,   9,   13,  15,  16,  17,
                             23, 31, 32, 33, 63,  64,  65,  127, 131, 576,
                             1001, 1536 };

static uint16_t to16(float v, mhsa_dtype dt)
{
    return dt == MHSA_F16 ? mhsa_f32_to_f16(v) : mhsa_f32_to_bf16(v);
}

static float from16(uint16_t h, mhsa_dtype dt)
{
    return dt == MHSA_F16 ? mhsa_f16_to_f32(h) : mhsa_bf16_to_f32(h);
}

// n rows of d used elements, lda apart, ending at the last used element.
static uint16_t *alloc_rows(size_t n, size_t d, size_t lda)
{
    size_t len = (n - 1) * lda + d;
    uint16_t *a = malloc(len * sizeof *a);
    ck_assert(a);
    return a;
}

static void fill_rows(rng *r, uint16_t *a, size_t n, size_t d, size_t lda,
                      mhsa_dtype dt, int ints)
{
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < lda && (j + 1 < n || i < d); i++) {
            float v = ints ? (float)rng_int(r, -4, 4)
                           : rng_uniform(r, -1.0f, 1.0f);
            a[j * lda + i] = to16(v, dt);
        }
}

START_TEST(gemv16_matches_reference_and_scalar)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    const mhsa_kernels *sc = &mhsa_kernels_scalar;
    rng r = { 11 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
                for (int bi = 0; bi < 2; bi++) {
                    size_t n = ns[ni], d = ds[di];
                    if (test_quick() && n * d > 50000)
                        continue;
                    size_t lda = d + rng_u64(&r) % 3;
                    float beta = (float)bi;
                    uint16_t *a = alloc_rows(n, d, lda);
                    fill_rows(&r, a, n, d, lda, dts[w], 0);
                    float *x = alloc_guarded(d), *y0 = alloc_guarded(n);
                    float *y = alloc_guarded(n), *ys = alloc_guarded(n);
                    fill_uniform(&r, x, d, -1, 1);
                    fill_uniform(&r, y0, n, -1, 1);
                    for (size_t j = 0; j < n; j++)
                        y[j] = ys[j] = beta == 0.0f ? NAN : y0[j];
                    k->gemv_n16(n, d, a, lda, dts[w], x, y, beta);
                    sc->gemv_n16(n, d, a, lda, dts[w], x, ys, beta);
                    for (size_t j = 0; j < n; j++) {
                        double want = beta == 0.0f ? 0.0 : (double)y0[j];
                        double mag = 1.0;
                        for (size_t i = 0; i < d; i++) {
                            double p = (double)from16(a[j * lda + i],
                                                      dts[w]) * x[i];
                            want += p;
                            mag += fabs(p);
                        }
                        double tol = 4e-7 * mag * (1 + log2((double)d));
                        ck_assert_msg(fabs(y[j] - want) <= tol &&
                                      fabs(ys[j] - want) <= tol &&
                                      fabs(y[j] - ys[j]) <= 2 * tol,
                                      "%s gemv_n16 %s n %zu d %zu lda %zu "
                                      "beta %g row %zu: %.9g (scalar %.9g) "
                                      "vs %.9g", k->name, dt_names[w], n, d,
                                      lda, (double)beta, j, y[j], ys[j],
                                      want);
                    }
                    ck_assert(guard_ok(y, n) && guard_ok(x, d) &&
                              guard_ok(ys, n));
                    free(a);
                    free_guarded(x);
                    free_guarded(y0);
                    free_guarded(y);
                    free_guarded(ys);
                }
}
END_TEST

// Small integers: every product and partial sum is exact in fp32, so each
// ISA must give exactly the sum, whatever its order (a skipped or doubled
// element shows).
START_TEST(gemv16_exact_on_small_integers)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng r = { 23 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
                size_t n = ns[ni], d = ds[di], lda = d + (di % 2);
                uint16_t *a = alloc_rows(n, d, lda);
                fill_rows(&r, a, n, d, lda, dts[w], 1);
                float *x = alloc_guarded(d), *y = alloc_guarded(n);
                fill_small_ints(&r, x, d, 3);
                k->gemv_n16(n, d, a, lda, dts[w], x, y, 0.0f);
                for (size_t j = 0; j < n; j++) {
                    double want = 0.0;
                    for (size_t i = 0; i < d; i++)
                        want += (double)from16(a[j * lda + i], dts[w]) * x[i];
                    ck_assert_msg((double)y[j] == want,
                                  "%s gemv_n16 %s n %zu d %zu row %zu: %g, "
                                  "want %g", k->name, dt_names[w], n, d, j,
                                  (double)y[j], want);
                }
                free(a);
                free_guarded(x);
                free_guarded(y);
            }
}
END_TEST

// A row's bits depend on d only: row j of an n-row call equals the same
// row alone and in calls that start 1 and 5 rows later (so it pairs with
// other rows, in another run of the plan or among the last n % 6), for n
// that give the plan (kernels/gemv_plan.h) no step, one, several, and
// each remainder.
START_TEST(gemv16_rows_independent_of_n)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng r = { 31 + (uint64_t)_i };
    static const size_t dd[] = { 1, 9, 17, 33, 576, 1001 };
    static const size_t nn[] = { 7, 13, 50 };
    for (int w = 0; w < 2; w++)
        for (size_t ni = 0; ni < sizeof nn / sizeof *nn; ni++)
            for (size_t di = 0; di < sizeof dd / sizeof *dd; di++) {
                size_t n = nn[ni], d = dd[di], lda = d + 1;
                uint16_t *a = alloc_rows(n, d, lda);
                fill_rows(&r, a, n, d, lda, dts[w], 0);
                float *x = alloc_guarded(d);
                fill_uniform(&r, x, d, -1, 1);
                float all[50], later[50], later5[50], one;
                k->gemv_n16(n, d, a, lda, dts[w], x, all, 0.0f);
                k->gemv_n16(n - 1, d, a + lda, lda, dts[w], x, later, 0.0f);
                k->gemv_n16(n - 5, d, a + 5 * lda, lda, dts[w], x, later5,
                            0.0f);
                for (size_t j = 0; j < n; j++) {
                    k->gemv_n16(1, d, a + j * lda, lda, dts[w], x, &one,
                                0.0f);
                    ck_assert_msg(
                        memcmp(&one, &all[j], sizeof one) == 0 &&
                            (j < 1 ||
                             memcmp(&one, &later[j - 1], sizeof one) == 0) &&
                            (j < 5 ||
                             memcmp(&one, &later5[j - 5], sizeof one) == 0),
                        "%s gemv_n16 %s n %zu d %zu row %zu: bits depend on "
                        "the rows beside it", k->name, dt_names[w], n, d, j);
                }
                free(a);
                free_guarded(x);
            }
}
END_TEST

// A 16-bit row has the bits of gemv_n on the same row widened to fp32
// (the ISA's tile is gemv_n's, each chunk widened exactly), beta 0 and 1,
// with rows holding 16-bit subnormals, signed zeros and the largest
// finite values beside ordinary ones, and some rows a NaN or an inf
// (those compared as NaN / the same inf). In the default floating-point
// state and in the library's (FTZ/DAZ: BF16 subnormals widen to fp32
// subnormals, which both then read as zeros).
START_TEST(gemv16_bits_equal_gemv_n_widened)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng r = { 53 + (uint64_t)_i };
    static const size_t dd[] = { 1, 7, 8, 15, 16, 31, 33, 64, 65, 576, 1001 };
    static const size_t nn[] = { 1, 5, 6, 13, 31 };
    for (int ftz = 0; ftz < 2; ftz++)
        for (int w = 0; w < 2; w++)
            for (size_t ni = 0; ni < sizeof nn / sizeof *nn; ni++)
                for (size_t di = 0; di < sizeof dd / sizeof *dd; di++) {
                    size_t n = nn[ni], d = dd[di], lda = d + (di % 3);
                    float beta = (float)((ni + di) % 2);
                    uint16_t *a = alloc_rows(n, d, lda);
                    fill_rows(&r, a, n, d, lda, dts[w], 0);
                    for (size_t j = 0; j < n; j++)
                        for (size_t i = 0; i < d; i++) {
                            uint16_t *e = &a[j * lda + i];
                            uint16_t sign = (uint16_t)(rng_u64(&r) & 0x8000);
                            switch (rng_u64(&r) % 16) {
                            case 0:   // a subnormal of the 16-bit type
                                *e = sign | (uint16_t)(1 + rng_u64(&r) % 0x7f);
                                break;
                            case 1:   // a signed zero
                                *e = sign;
                                break;
                            case 2:   // the largest finite magnitude
                                *e = sign | (dts[w] == MHSA_F16 ? 0x7bff
                                                                : 0x7f7f);
                                break;
                            default:
                                break;
                            }
                        }
                    if (n > 2) {   // row 1 holds a NaN, row 2 an inf
                        a[1 * lda + d / 2] = dts[w] == MHSA_F16 ? 0x7e00
                                                                : 0x7fc0;
                        a[2 * lda + d / 3] = dts[w] == MHSA_F16 ? 0xfc00
                                                                : 0xff80;
                    }
                    float *wide = alloc_guarded(n * lda);
                    for (size_t j = 0; j < n; j++)
                        for (size_t i = 0; i < d; i++)
                            wide[j * lda + i] =
                                from16(a[j * lda + i], dts[w]);
                    float *x = alloc_guarded(d), *y = alloc_guarded(n);
                    float *yw = alloc_guarded(n);
                    fill_uniform(&r, x, d, -1, 1);
                    for (size_t j = 0; j < n; j++)
                        y[j] = yw[j] = beta == 0.0f ? NAN
                                                    : rng_uniform(&r, -1, 1);
                    mhsa_fpstate fp;
                    if (ftz)
                        fp = mhsa__fp_enter();
                    k->gemv_n16(n, d, a, lda, dts[w], x, y, beta);
                    k->gemv_n(n, d, wide, lda, x, yw, beta);
                    if (ftz)
                        mhsa__fp_leave(fp);
                    for (size_t j = 0; j < n; j++)
                        ck_assert_msg(isnan(yw[j]) ? isnan(y[j])
                                                   : memcmp(&y[j], &yw[j],
                                                            sizeof y[j]) == 0,
                                      "%s gemv_n16 %s n %zu d %zu beta %g "
                                      "ftz %d row %zu: %.9g, gemv_n on the "
                                      "widened row %.9g", k->name,
                                      dt_names[w], n, d, (double)beta, ftz, j,
                                      (double)y[j], (double)yw[j]);
                    ck_assert(guard_ok(y, n) && guard_ok(yw, n) &&
                              guard_ok(x, d) && guard_ok(wide, n * lda));
                    free(a);
                    free_guarded(wide);
                    free_guarded(x);
                    free_guarded(y);
                    free_guarded(yw);
                }
}
END_TEST

// NaN, +inf and -inf stored in one element of one row; in another case x
// is 0 where a row holds inf (inf * 0 = NaN). Which results are NaN, which
// are +-inf and which finite follows from IEEE whatever the order of the
// sum, so every ISA must agree with scalar on it.
START_TEST(gemv16_nan_and_inf_propagate)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t nd[][2] = { { 1, 1 }, { 3, 17 }, { 6, 33 },
                                    { 5, 576 }, { 2, 7 } };
    rng r = { 41 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (size_t c = 0; c < sizeof nd / sizeof nd[0]; c++)
            for (int what = 0; what < 4; what++) {
                size_t n = nd[c][0], d = nd[c][1], lda = d;
                uint16_t *a = alloc_rows(n, d, lda);
                fill_rows(&r, a, n, d, lda, dts[w], 0);
                float *x = alloc_guarded(d);
                fill_uniform(&r, x, d, -1, 1);
                size_t jb = (size_t)rng_int(&r, 0, (int)n - 1);
                size_t ib = (size_t)rng_int(&r, 0, (int)d - 1);
                // what: 0 NaN, 1 +inf, 2 -inf, 3 +inf times x = 0
                float bad = what == 0 ? NAN : what == 2 ? -INFINITY
                                                        : INFINITY;
                a[jb * lda + ib] = to16(bad, dts[w]);
                if (what == 3)
                    x[ib] = 0.0f;
                else if (x[ib] == 0.0f)
                    x[ib] = 0.5f;
                float *y = alloc_guarded(n), *ys = alloc_guarded(n);
                k->gemv_n16(n, d, a, lda, dts[w], x, y, 0.0f);
                mhsa_kernels_scalar.gemv_n16(n, d, a, lda, dts[w], x, ys,
                                             0.0f);
                // the scalar reference itself: the bad row is NaN or inf
                ck_assert(what == 1 || what == 2 ? isinf(ys[jb])
                                                 : isnan(ys[jb]));
                for (size_t j = 0; j < n; j++) {
                    int ok = isnan(y[j]) == isnan(ys[j]) &&
                             (!isinf(ys[j]) || y[j] == ys[j]) &&
                             (!isfinite(ys[j]) || isfinite(y[j]));
                    ck_assert_msg(ok, "%s gemv_n16 %s n %zu d %zu bad %d at "
                                  "(%zu, %zu): row %zu is %g, scalar %g",
                                  k->name, dt_names[w], n, d, what, jb, ib,
                                  j, (double)y[j], (double)ys[j]);
                }
                free(a);
                free_guarded(x);
                free_guarded(y);
                free_guarded(ys);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_gemv16");
    TCase *tc = tcase_create("gemv16");
    tcase_add_loop_test(tc, gemv16_matches_reference_and_scalar, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv16_exact_on_small_integers, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv16_rows_independent_of_n, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv16_bits_equal_gemv_n_widened, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv16_nan_and_inf_propagate, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
