// test_blocking.c — the GEMM block sizes derived from the caches
// (kernels/blocking.c) and what dispatch hands out (dispatch.c,
// MHSA_BLOCKING): the rule's promises on many cache shapes, the tables
// dispatch gives under the MHSA_BLOCKING this process was started with
// (meson runs this test three times: unset, "table", and "64,7,20"), and
// a GEMM over more K blocks than the default gives against a double
// reference, bitwise the same at 1 and 2 threads; and that mc and nc
// never change the bits (only kc does).
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blocking.h"
#include "gemm/gemm.h"
#include "util.h"

static const int tiles[][2] = { { 4, 8 }, { 6, 16 }, { 8, 12 }, { 12, 32 },
                                { 1, 1 }, { 16, 4 } };

// The rule's promises (blocking.c) for every tile on caches from tiny to
// huge: multiples of the tile, kc within its clamp and a multiple of 16,
// the B micro-panel within half of L1d and the two A micro-panels beside
// it, mc and nc within their cap and their L2 quarter where the clamps
// allow.
START_TEST(rule_keeps_its_promises)
{
    static const size_t l1s[] = { 4u << 10, 16u << 10, 32u << 10, 48u << 10,
                                  64u << 10, 128u << 10, 4u << 20 };
    static const size_t l2s[] = { 64u << 10, 256u << 10, 512u << 10,
                                  1u << 20, 2u << 20, 256u << 20 };
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++)
        for (size_t i = 0; i < sizeof l1s / sizeof l1s[0]; i++)
            for (size_t j = 0; j < sizeof l2s / sizeof l2s[0]; j++) {
                int mr = tiles[t][0], nr = tiles[t][1];
                mhsa_cpu_caches c = { l1s[i], l2s[j], 0, "test" };
                mhsa_gemm_blocking b = mhsa__blocking_for_caches(mr, nr, &c);
                size_t m = (size_t)mr, n = (size_t)nr;
                ck_assert_msg(b.kc >= 64 && b.kc <= 512 && b.kc % 16 == 0,
                              "kc %zu", b.kc);
                ck_assert(b.mc % m == 0 && b.mc >= 2 * m && b.mc <= 256);
                ck_assert(b.nc % n == 0 && b.nc >= 2 * n && b.nc <= 256);
                if (b.kc > 64) {   // not clamped up: the L1 promises hold
                    ck_assert(4 * b.kc * n <= c.l1d / 2);
                    ck_assert(4 * b.kc * (n + 2 * m) <= c.l1d);
                }
                if (b.mc > 2 * m)  // not clamped up: within an L2 quarter
                    ck_assert(4 * (b.mc - m) * b.kc <= c.l2 / 4);
                if (b.nc > 2 * n)
                    ck_assert(4 * b.nc * b.kc <= c.l2 / 4);
                // A bigger L1d never gives a shallower kc.
                mhsa_cpu_caches c2 = c;
                c2.l1d *= 2;
                if (c2.l2 < c2.l1d) c2.l2 = c2.l1d;
                ck_assert(mhsa__blocking_for_caches(mr, nr, &c2).kc >= b.kc);
            }
}
END_TEST

// The worked case of blocking.c's comment: a Zen 3 core (32 KiB L1d,
// 512 KiB L2) gives the 6x16 tile kc 256 (a 16 KiB B micro-panel, half
// of L1d), mc 132 (128 KiB of A, a quarter of L2, rounded up to 22 tiles)
// and nc 128 (a 128 KiB B slice).
START_TEST(rule_on_a_zen3_core)
{
    mhsa_cpu_caches c = { 32u << 10, 512u << 10, 32u << 20, "test" };
    mhsa_gemm_blocking b = mhsa__blocking_for_caches(6, 16, &c);
    ck_assert_uint_eq(b.kc, 256);
    ck_assert_uint_eq(b.mc, 132);
    ck_assert_uint_eq(b.nc, 128);
}
END_TEST

START_TEST(fit_rounds_to_the_tile)
{
    mhsa_gemm_blocking b = mhsa__blocking_fit(6, 16,
                                              (mhsa_gemm_blocking){ 0, 7, 20 });
    ck_assert_uint_eq(b.kc, 1);
    ck_assert_uint_eq(b.mc, 12);
    ck_assert_uint_eq(b.nc, 32);
    b = mhsa__blocking_fit(6, 16, (mhsa_gemm_blocking){ 100, 1, 1 });
    ck_assert_uint_eq(b.kc, 100);
    ck_assert_uint_eq(b.mc, 6);
    ck_assert_uint_eq(b.nc, 16);
}
END_TEST

// What dispatch hands out for every ISA here, under this process's
// MHSA_BLOCKING (dispatch.c).
START_TEST(dispatch_applies_the_choice)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    const mhsa_kernels *fixed = mhsa__fixed_table(k->isa);
    ck_assert(fixed != NULL);
    if (k == emulated_table(all_isas[_i])) {
        // The test-only stand-in keeps its own table's numbers, which are
        // the native table's.
        ck_assert_uint_eq(k->blocking.kc, fixed->blocking.kc);
        ck_assert_uint_eq(k->blocking.mc, fixed->blocking.mc);
        ck_assert_uint_eq(k->blocking.nc, fixed->blocking.nc);
        return;
    }
    ck_assert_int_eq(k->mr, fixed->mr);
    ck_assert(k->sgemm_ukr == fixed->sgemm_ukr);
    const char *e = getenv("MHSA_BLOCKING");
    unsigned long kc, mc, nc;
    mhsa_gemm_blocking want;
    if (e && strcmp(e, "table") == 0) {
        want = fixed->blocking;
        ck_assert_str_eq(mhsa__blocking_source(),
                         "table (MHSA_BLOCKING=table)");
    } else if (e && sscanf(e, "%lu,%lu,%lu", &kc, &mc, &nc) == 3) {
        want = mhsa__blocking_fit(k->mr, k->nr,
                                  (mhsa_gemm_blocking){ kc, mc, nc });
        ck_assert_str_eq(mhsa__blocking_source(), "MHSA_BLOCKING");
    } else {
        want = mhsa__blocking_for_caches(k->mr, k->nr, mhsa__cpu_caches());
        ck_assert_str_eq(mhsa__blocking_source(),
                         "cpu caches (kernels/blocking.c)");
    }
    printf("%s: kc %zu mc %zu nc %zu (%s)\n", k->name, k->blocking.kc,
           k->blocking.mc, k->blocking.nc, mhsa__blocking_source());
    ck_assert_uint_eq(k->blocking.kc, want.kc);
    ck_assert_uint_eq(k->blocking.mc, want.mc);
    ck_assert_uint_eq(k->blocking.nc, want.nc);
    // The same table every time (blocks packed for it stay valid).
    ck_assert_ptr_eq(mhsa_kernels_for(k->isa), k);
}
END_TEST

// One GEMM through the table dispatch gave, at depths around its kc
// (several K blocks), against a double reference; 1 and 2 threads agree
// bitwise.
START_TEST(gemm_over_k_blocks)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    size_t kc = k->blocking.kc;
    size_t m = 2 * k->blocking.mc + 5, n = 2 * k->blocking.nc + 3;
    size_t kds[] = { kc - 1, kc + 1, 3 * kc + 7 };
    for (size_t q = 0; q < sizeof kds / sizeof kds[0]; q++) {
        size_t kd = kds[q];
        float *a = malloc(m * kd * sizeof *a), *b = malloc(kd * n * sizeof *b);
        float *c1 = malloc(m * n * sizeof *c1), *c2 = malloc(m * n * sizeof *c2);
        rng r = { 77 + q };
        for (size_t i = 0; i < m * kd; i++) a[i] = rng_uniform(&r, -1.0f, 1.0f);
        for (size_t i = 0; i < kd * n; i++) b[i] = rng_uniform(&r, -1.0f, 1.0f);
        mhsa_gemm_scratch s = {
            malloc(2 * mhsa_gemm_a_floats(k) * sizeof(float)),
            malloc(mhsa_gemm_b_floats(k, n) * sizeof(float)),
            mhsa_gemm_b_floats(k, n), 2 };
        float *cs[2] = { c1, c2 };
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            mhsa_sgemm(k, &s, 0, 0, m, n, kd, 1.0f, a, kd, b, n, NULL, 0.0f,
                       cs[t - 1], n);
        }
        ck_assert_msg(memcmp(c1, c2, m * n * sizeof *c1) == 0,
                      "%s kd %zu: 1 and 2 threads differ", k->name, kd);
        for (size_t i = 0; i < m; i += 7)
            for (size_t j = 0; j < n; j += 5) {
                double ref = 0.0, mag = 0.0;
                for (size_t p = 0; p < kd; p++) {
                    ref += (double)a[i * kd + p] * b[p * n + j];
                    mag += fabs((double)a[i * kd + p] * b[p * n + j]);
                }
                ck_assert_msg(fabs(c1[i * n + j] - ref) <=
                              (double)(kd + 4) * 1.2e-7 * mag,
                              "%s kd %zu C[%zu][%zu] = %g want %g", k->name,
                              kd, i, j, c1[i * n + j], ref);
            }
        free(a); free(b); free(c1); free(c2); free(s.a); free(s.b);
    }
}
END_TEST

// mc and nc group the same micro-kernel calls into other tiles (gemm.c
// evens the blocks out, edges stay on the tile grid), so only kc may change
// C's bits: several (mc, nc) at one kc give identical C, at 1 and 2
// threads, with shapes whose last block is short.
START_TEST(only_kc_changes_bits)
{
    const mhsa_kernels *base = kernels_or_skip(_i);
    if (!base)
        return;
    size_t mr = (size_t)base->mr, nr = (size_t)base->nr;
    size_t m = 512 + 3, n = 5 * nr + 7, kd = 300;
    float *a = malloc(m * kd * sizeof *a), *b = malloc(kd * n * sizeof *b);
    float *ref = malloc(m * n * sizeof *ref), *c = malloc(m * n * sizeof *c);
    rng r = { 4242 };
    for (size_t i = 0; i < m * kd; i++) a[i] = rng_uniform(&r, -1.0f, 1.0f);
    for (size_t i = 0; i < kd * n; i++) b[i] = rng_uniform(&r, -1.0f, 1.0f);
    const size_t mcs[] = { mr, 40 * mr, 240 / mr * mr + mr, 600 };
    const size_t ncs[] = { nr, 2 * nr, 4 * nr, 8 * nr };
    for (int q = 0; q < 4; q++)
        for (int t = 1; t <= 2; t++) {
            mhsa_kernels k = *base;
            k.blocking = mhsa__blocking_fit(k.mr, k.nr,
                (mhsa_gemm_blocking){ 128, mcs[q], ncs[q] });
            mhsa_gemm_scratch s = {
                malloc(2 * mhsa_gemm_a_floats(&k) * sizeof(float)),
                malloc(mhsa_gemm_b_floats(&k, n) * sizeof(float)),
                mhsa_gemm_b_floats(&k, n), 2 };
            omp_set_num_threads(t);
            mhsa_sgemm(&k, &s, 0, 0, m, n, kd, 1.0f, a, kd, b, n, NULL,
                       0.0f, q == 0 && t == 1 ? ref : c, n);
            if (q || t > 1)
                ck_assert_msg(memcmp(ref, c, m * n * sizeof *c) == 0,
                              "%s: mc %zu nc %zu at %d threads changed bits",
                              base->name, k.blocking.mc, k.blocking.nc, t);
            free(s.a);
            free(s.b);
        }
    free(a); free(b); free(ref); free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("blocking");
    TCase *t = tcase_create("blocking");
    tcase_set_timeout(t, 300);
    tcase_add_test(t, rule_keeps_its_promises);
    tcase_add_test(t, rule_on_a_zen3_core);
    tcase_add_test(t, fit_rounds_to_the_tile);
    tcase_add_loop_test(t, dispatch_applies_the_choice, 0, N_ISAS);
    tcase_add_loop_test(t, gemm_over_k_blocks, 0, N_ISAS);
    tcase_add_loop_test(t, only_kc_changes_bits, 0, N_ISAS);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return run_suite(suite()); }
