// test_kernel_w16.c — what the GEMM and the one-row products do with
// 16-bit (F16 / BF16) weights, on every ISA: the packer that widens a
// 16-bit op(B) (gemm/pack_b16.c) writes exactly the panel the table's
// pack_b writes for the widened matrix, over all 16-bit patterns (NaN,
// inf, subnormals included), depths across the slab and KC sizes and
// widths 1..nr; mhsa_sgemm_dt gives the bits of mhsa_sgemm on the widened
// B (both transposes, shapes off the tile and the blocking, beta 0 and
// 1); mhsa_gemv_rows_dt (kv_dot over 16-bit rows) matches a double
// reference as tightly as the fp32 gemv does, for d up to 1536.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"
#include "gemm/pack_b16.h"
#include "kernels/half.h"
#include "util.h"

static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16 };
static const char *const dt_names[] = { "f16", "bf16" };

static uint16_t *alloc16(size_t n)
{
    uint16_t *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert(p);
    return p;
}

static void widen(const uint16_t *h, size_t n, mhsa_dtype dt, float *x)
{
    for (size_t i = 0; i < n; i++)
        x[i] = dt == MHSA_F16 ? mhsa_f16_to_f32(h[i]) : mhsa_bf16_to_f32(h[i]);
}

// Same value, or both NaN (a NaN's payload may be made quiet).
static int same(float a, float b)
{
    return (isnan(a) && isnan(b)) || mhsa_f32_bits(a) == mhsa_f32_bits(b);
}

static const size_t depths[] = { 1, 2, 3, 7, 8, 9, 16, 17, 63, 64, 65,
                                 127, 128, 129, 255, 256, 257, 300, 513 };
enum { N_DEPTHS = sizeof depths / sizeof depths[0] };

START_TEST(pack_b16_is_pack_b_of_widened)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    size_t nr = (size_t)k->nr;
    rng r = { 23 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (int trans = 0; trans < 2; trans++)
            for (size_t di = 0; di < N_DEPTHS; di++)
                for (size_t cols = 1; cols <= nr; cols++) {
                    if (cols > 3 && cols + 2 < nr && cols % 5)
                        continue;   // a sample of the middle widths
                    size_t kc = depths[di];
                    size_t ldb = (trans ? kc : cols) + rng_u64(&r) % 3;
                    size_t rows = trans ? cols : kc;
                    size_t n = rows * ldb;
                    uint16_t *h = alloc16(n);
                    for (size_t i = 0; i < n; i++)   // every pattern class
                        h[i] = (uint16_t)rng_u64(&r);
                    float *x = malloc(n * sizeof *x);
                    float *want = alloc_guarded(nr * kc);
                    float *got = alloc_guarded(nr * kc);
                    widen(h, n, dts[w], x);
                    k->pack_b(kc, cols, x, ldb, trans, want);
                    mhsa__pack_b_16(k, kc, cols, h, ldb, trans, dts[w], got);
                    size_t bad = 0;
                    for (size_t i = 0; i < nr * kc; i++)
                        bad += !same(got[i], want[i]);
                    ck_assert_msg(bad == 0 && guard_ok(got, nr * kc),
                                  "%s pack_b16 %s trans %d kc %zu w %zu: %zu "
                                  "of %zu differ (or out of bounds)", k->name,
                                  dt_names[w], trans, kc, cols, bad, nr * kc);
                    free(h);
                    free(x);
                    free_guarded(want);
                    free_guarded(got);
                }
}
END_TEST

static mhsa_gemm_scratch scratch_for(const mhsa_kernels *k, size_t n)
{
    mhsa_gemm_scratch s = { NULL, NULL, mhsa_gemm_b_floats(k, n), 2 };
    s.a = malloc(2 * mhsa_gemm_a_floats(k) * sizeof(float));
    s.b = malloc(s.b_floats * sizeof(float));
    ck_assert(s.a && s.b);
    return s;
}

// 16-bit values of finite weights (uniform in [-1, 1), rounded).
static void fill16(rng *r, uint16_t *h, size_t n, mhsa_dtype dt)
{
    for (size_t i = 0; i < n; i++) {
        float v = rng_uniform(r, -1.0f, 1.0f);
        h[i] = dt == MHSA_F16 ? mhsa_f32_to_f16(v) : mhsa_f32_to_bf16(v);
    }
}

static const size_t gemm_shapes[][3] = {   // m, n, k
    { 2, 1, 1 }, { 2, 3, 5 }, { 7, 13, 17 }, { 13, 37, 300 }, { 5, 100, 1 },
    { 31, 17, 257 }, { 64, 64, 64 }, { 130, 53, 513 }, { 3, 129, 129 },
};
enum { N_GEMM = sizeof gemm_shapes / sizeof gemm_shapes[0] };

START_TEST(sgemm_dt_bits_equal_widened)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng r = { 99 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t si = 0; si < N_GEMM; si++)
                for (int bi = 0; bi < 2; bi++) {
                    size_t m = gemm_shapes[si][0], n = gemm_shapes[si][1],
                           kd = gemm_shapes[si][2];
                    float beta = (float)bi;
                    size_t ldb = (tb ? kd : n) + 1, brows = tb ? n : kd;
                    uint16_t *h = alloc16(brows * ldb);
                    fill16(&r, h, brows * ldb, dts[w]);
                    float *bw = malloc(brows * ldb * sizeof *bw);
                    widen(h, brows * ldb, dts[w], bw);
                    float *a = malloc(m * kd * sizeof *a);
                    fill_uniform(&r, a, m * kd, -1, 1);
                    float *c0 = malloc(m * n * sizeof *c0);
                    fill_uniform(&r, c0, m * n, -1, 1);
                    float *c1 = alloc_guarded(m * n),
                          *c2 = alloc_guarded(m * n);
                    memcpy(c1, c0, m * n * sizeof *c0);
                    memcpy(c2, c0, m * n * sizeof *c0);
                    mhsa_gemm_scratch s = scratch_for(k, n);
                    mhsa_sgemm(k, &s, 0, tb, m, n, kd, 1.0f, a, kd, bw, ldb,
                               NULL, beta, c1, n);
                    mhsa_sgemm_dt(k, &s, 0, tb, m, n, kd, 1.0f, a, kd, h,
                                  dts[w], ldb, NULL, beta, c2, n);
                    ck_assert_msg(!memcmp(c1, c2, m * n * sizeof *c1) &&
                                  guard_ok(c2, m * n),
                                  "%s sgemm_dt %s trans_b %d %zux%zux%zu beta "
                                  "%g: bits differ from the widened B",
                                  k->name, dt_names[w], tb, m, n, kd,
                                  (double)beta);
                    free(s.a);
                    free(s.b);
                    free(h);
                    free(bw);
                    free(a);
                    free(c0);
                    free_guarded(c1);
                    free_guarded(c2);
                }
}
END_TEST

static const size_t gv_n[] = { 1, 2, 3, 5, 63, 64, 65, 129, 577 };
static const size_t gv_d[] = { 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65,
                               127, 576, 1000, 1536 };

START_TEST(gemv_rows_dt_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng r = { 7 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (size_t ni = 0; ni < sizeof gv_n / sizeof *gv_n; ni++)
            for (size_t di = 0; di < sizeof gv_d / sizeof *gv_d; di++)
                for (int bi = 0; bi < 2; bi++) {
                    size_t n = gv_n[ni], d = gv_d[di];
                    if (test_quick() && n * d > 100000)
                        continue;
                    size_t ldw = d + rng_u64(&r) % 3;
                    float beta = (float)bi;
                    uint16_t *h = alloc16(n * ldw);
                    fill16(&r, h, n * ldw, dts[w]);
                    float *wf = malloc(n * ldw * sizeof *wf);
                    widen(h, n * ldw, dts[w], wf);
                    float *x = alloc_guarded(d), *y0 = malloc(n * sizeof *y0);
                    fill_uniform(&r, x, d, -1, 1);
                    fill_uniform(&r, y0, n, -1, 1);
                    float *y = alloc_guarded(n), *yf = alloc_guarded(n);
                    for (size_t j = 0; j < n; j++)
                        y[j] = yf[j] = beta == 0.0f ? NAN : y0[j];
                    mhsa_gemm_scratch s = scratch_for(k, n);
                    mhsa_gemv_rows_dt(k, &s, n, d, h, dts[w], ldw, x, y,
                                      beta);
                    mhsa_gemv_rows(k, &s, n, d, wf, ldw, x, yf, beta);
                    for (size_t j = 0; j < n; j++) {
                        double want = beta == 0.0f ? 0.0 : (double)y0[j];
                        double mag = 1.0;
                        for (size_t i = 0; i < d; i++) {
                            double p = (double)wf[j * ldw + i] * x[i];
                            want += p;
                            mag += fabs(p);
                        }
                        double tol = 4e-7 * mag * (1 + log2((double)d));
                        ck_assert_msg(fabs(y[j] - want) <= tol &&
                                      fabs(yf[j] - want) <= tol,
                                      "%s gemv_rows_dt %s n %zu d %zu beta "
                                      "%g row %zu: %.9g (fp32 %.9g) vs %.9g",
                                      k->name, dt_names[w], n, d,
                                      (double)beta, j, y[j], yf[j], want);
                    }
                    ck_assert(guard_ok(y, n) && guard_ok(x, d));
                    free(s.a);
                    free(s.b);
                    free(h);
                    free(wf);
                    free_guarded(x);
                    free(y0);
                    free_guarded(y);
                    free_guarded(yf);
                }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_w16");
    TCase *tc = tcase_create("w16");
    tcase_add_loop_test(tc, pack_b16_is_pack_b_of_widened, 0, N_ISAS);
    tcase_add_loop_test(tc, sgemm_dt_bits_equal_widened, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv_rows_dt_matches_reference, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
