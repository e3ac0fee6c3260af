// test_kernel_gemv.c — gemv_n / gemv_t and the decode products kv_dot /
// kv_acc of every ISA against a double reference and against scalar:
// sizes around the vector widths and the unroll factors, odd leading
// dimensions, beta 0 (y poisoned) and 1, canaries after every buffer.
// kv_dot / kv_acc run over K/V rows stored as F32, F16 and BF16 for m = 1..9
// query rows; with F32 each row's bits equal gemv_n / gemv_t on that row, and
// a row's bits never depend on m or on which rows share the call.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

// ---- kv_dot / kv_acc: decode products over K/V rows of any dtype --------

static const mhsa_dtype kv_dtypes[3] = { MHSA_F32, MHSA_F16, MHSA_BF16 };
static const char *const kv_dt_names[3] = { "f32", "f16", "bf16" };

// n and d: 1, primes, around the vector widths (4, 8, 16) and unrolls, and
// the head sizes of real models.
static const size_t kv_sizes[] = { 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 33,
                                   64, 67, 128, 129 };
enum { N_KV_SIZES = sizeof kv_sizes / sizeof kv_sizes[0] };

// A K or V cache of n rows of d elements stored as dt, row stride ld >= d.
// vals holds the fp32 value of every stored element (n, ld), i.e. what the
// kernel must see after conversion. Elements between d and ld are a NaN
// (any read of them poisons a result) and canaries follow the buffer.
typedef struct kv_rows {
    mhsa_dtype dt;
    size_t n, d, ld;
    void *data;      // bytes: (n*ld + 2*pad) * dtype size, data past pad
    float *vals;     // (n, ld)
} kv_rows;

enum { KV_PAD = 32 };   // canary elements before and after

static unsigned char kv_canary(size_t i) { return (unsigned char)(0x5a ^ i); }

static void kv_rows_make(kv_rows *kv, mhsa_dtype dt, size_t n, size_t d,
                         size_t ld, rng *g, int small_ints)
{
    size_t es = mhsa_dtype_size(dt), cnt = n * ld;
    kv->dt = dt, kv->n = n, kv->d = d, kv->ld = ld;
    kv->vals = malloc((cnt ? cnt : 1) * sizeof(float));
    unsigned char *b = malloc((cnt + 2 * KV_PAD) * es);
    ck_assert(kv->vals && b);
    for (size_t i = 0; i < (cnt + 2 * KV_PAD) * es; i++)
        b[i] = kv_canary(i);
    kv->data = b + KV_PAD * es;
    float *x = malloc((cnt ? cnt : 1) * sizeof(float));
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < ld; i++)
            x[j * ld + i] = i >= d ? NAN
                          : small_ints ? (float)rng_int(g, -4, 4)
                                       : rng_uniform(g, -1.0f, 1.0f);
    // Store through the scalar conversion (tested in test_kernel_convert),
    // then read back what was stored.
    mhsa_kernels_scalar.cvt_from_f32(cnt, x, kv->data, dt);
    mhsa_kernels_scalar.cvt_to_f32(cnt, kv->data, dt, kv->vals);
    free(x);
}

static int kv_rows_intact(const kv_rows *kv)
{
    size_t es = mhsa_dtype_size(kv->dt), cnt = kv->n * kv->ld;
    const unsigned char *b = (const unsigned char *)kv->data - KV_PAD * es;
    for (size_t i = 0; i < KV_PAD * es; i++)
        if (b[i] != kv_canary(i))
            return 0;
    for (size_t i = (KV_PAD + cnt) * es; i < (cnt + 2 * KV_PAD) * es; i++)
        if (b[i] != kv_canary(i))
            return 0;
    return 1;
}

static void kv_rows_free(kv_rows *kv)
{
    free((unsigned char *)kv->data - KV_PAD * mhsa_dtype_size(kv->dt));
    free(kv->vals);
}

// kv_dot on m query rows (ldq = d + 1) against the double reference and
// against scalar; s has lds = n + 2 and its gaps must survive.
static void check_kv_dot(const mhsa_kernels *k, int w, size_t m, size_t n,
                         size_t d, uint64_t seed)
{
    rng g = { seed };
    kv_rows kv;
    kv_rows_make(&kv, kv_dtypes[w], n, d, d + seed % 3, &g, 0);
    size_t ldq = d + 1, lds = n + 2;
    float *q = alloc_guarded(m * ldq), *s = alloc_guarded(m * lds);
    float *ss = alloc_guarded(m * lds);
    fill_uniform(&g, q, m * ldq, -1, 1);
    for (size_t i = 0; i < m * lds; i++)
        s[i] = ss[i] = NAN;   // written before read: poison
    for (size_t r = 0; r < m; r++)
        for (size_t j = n; j < lds; j++)
            s[r * lds + j] = ss[r * lds + j] = 42.0f;
    k->kv_dot(m, n, d, q, ldq, kv.data, kv.ld, kv.dt, s, lds);
    mhsa_kernels_scalar.kv_dot(m, n, d, q, ldq, kv.data, kv.ld, kv.dt, ss,
                               lds);
    ck_assert_msg(kv_rows_intact(&kv) && guard_ok(q, m * ldq)
                  && guard_ok(s, m * lds), "%s kv_dot %s m=%zu n=%zu d=%zu: "
                  "out of bounds", k->name, kv_dt_names[w], m, n, d);
    size_t bad = 0;
    for (size_t r = 0; r < m; r++) {
        for (size_t j = n; j < lds; j++)
            bad += s[r * lds + j] != 42.0f;
        for (size_t j = 0; j < n; j++) {
            double want = 0, mag = 1;
            for (size_t i = 0; i < d; i++) {
                double t = (double)q[r * ldq + i] * kv.vals[j * kv.ld + i];
                want += t;
                mag += fabs(t);
            }
            double tol = 4e-7 * mag * (1 + log2((double)d));
            float got = s[r * lds + j], sc = ss[r * lds + j];
            if (!(fabs(got - want) <= tol && fabs(got - sc) <= 2 * tol)
                && bad++ < 5)
                printf("%s kv_dot %s m=%zu n=%zu d=%zu r=%zu j=%zu: %g, "
                       "scalar %g, want %g\n", k->name, kv_dt_names[w], m, n,
                       d, r, j, got, sc, want);
        }
    }
    ck_assert_msg(bad == 0, "%s kv_dot %s m=%zu n=%zu d=%zu seed %llu: %zu "
                  "wrong", k->name, kv_dt_names[w], m, n, d,
                  (unsigned long long)seed, bad);
    kv_rows_free(&kv);
    free_guarded(q);
    free_guarded(s);
    free_guarded(ss);
}

// kv_acc on m rows (ldp = n + 1, ldo = d + 2): o += p V, some p exactly 0.
static void check_kv_acc(const mhsa_kernels *k, int w, size_t m, size_t n,
                         size_t d, uint64_t seed)
{
    rng g = { seed };
    kv_rows kv;
    kv_rows_make(&kv, kv_dtypes[w], n, d, d + seed % 3, &g, 0);
    size_t ldp = n + 1, ldo = d + 2;
    float *p = alloc_guarded(m * ldp), *o = alloc_guarded(m * ldo);
    float *os = alloc_guarded(m * ldo), *o0 = alloc_guarded(m * ldo);
    fill_uniform(&g, p, m * ldp, 0, 1);
    for (size_t i = 0; i < m * ldp; i++)
        if (rng_int(&g, 0, 4) == 0)
            p[i] = 0.0f;
    fill_uniform(&g, o0, m * ldo, -1, 1);
    for (size_t r = 0; r < m; r++)
        for (size_t i = d; i < ldo; i++)
            o0[r * ldo + i] = 42.0f;
    memcpy(o, o0, m * ldo * sizeof(float));
    memcpy(os, o0, m * ldo * sizeof(float));
    k->kv_acc(m, n, d, p, ldp, kv.data, kv.ld, kv.dt, o, ldo);
    mhsa_kernels_scalar.kv_acc(m, n, d, p, ldp, kv.data, kv.ld, kv.dt, os,
                               ldo);
    ck_assert_msg(kv_rows_intact(&kv) && guard_ok(p, m * ldp)
                  && guard_ok(o, m * ldo), "%s kv_acc %s m=%zu n=%zu d=%zu: "
                  "out of bounds", k->name, kv_dt_names[w], m, n, d);
    size_t bad = 0;
    for (size_t r = 0; r < m; r++) {
        for (size_t i = d; i < ldo; i++)
            bad += o[r * ldo + i] != 42.0f;
        for (size_t i = 0; i < d; i++) {
            double want = o0[r * ldo + i], mag = 1 + fabs(want);
            for (size_t j = 0; j < n; j++) {
                double t = (double)p[r * ldp + j] * kv.vals[j * kv.ld + i];
                want += t;
                mag += fabs(t);
            }
            double tol = 4e-7 * mag * (1 + log2((double)n));
            float got = o[r * ldo + i], sc = os[r * ldo + i];
            if (!(fabs(got - want) <= tol && fabs(got - sc) <= 2 * tol)
                && bad++ < 5)
                printf("%s kv_acc %s m=%zu n=%zu d=%zu r=%zu i=%zu: %g, "
                       "scalar %g, want %g\n", k->name, kv_dt_names[w], m, n,
                       d, r, i, got, sc, want);
        }
    }
    ck_assert_msg(bad == 0, "%s kv_acc %s m=%zu n=%zu d=%zu seed %llu: %zu "
                  "wrong", k->name, kv_dt_names[w], m, n, d,
                  (unsigned long long)seed, bad);
    kv_rows_free(&kv);
    free_guarded(p);
    free_guarded(o);
    free_guarded(os);
    free_guarded(o0);
}

START_TEST(kv_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    uint64_t seed = 500;
    for (int w = 0; w < 3; w++)
        for (size_t m = 1; m <= 9; m++)
            for (int a = 0; a < N_KV_SIZES; a++)
                for (int b = 0; b < N_KV_SIZES; b++, seed++) {
                    // every (n, d) pair for m = 1, a third of them for
                    // m = 4, a spread for the others (quick under qemu)
                    int spread = m == 1 ? 1 : m == 4 ? 3 : 8;
                    if ((a + 3 * b + (int)m) % spread)
                        continue;
                    check_kv_dot(k, w, m, kv_sizes[a], kv_sizes[b], seed);
                    check_kv_acc(k, w, m, kv_sizes[a], kv_sizes[b], seed);
                }
    // n = 0: nothing is written (s) and nothing changes (o).
    for (int w = 0; w < 3; w++) {
        float q[3] = { 1, 2, 3 }, s[2] = { 7, 7 }, o[3] = { 1, 2, 3 };
        uint32_t kdata[1] = { 0 };
        k->kv_dot(1, 0, 3, q, 3, kdata, 3, kv_dtypes[w], s, 1);
        k->kv_acc(1, 0, 3, q, 0, kdata, 3, kv_dtypes[w], o, 3);
        ck_assert(s[0] == 7 && s[1] == 7);
        ck_assert(o[0] == 1 && o[1] == 2 && o[2] == 3);
    }
}
END_TEST

// With F32 rows, kv_dot's row r is bitwise gemv_n (beta 0) on that row and
// kv_acc's is gemv_t, for every m (the contract that lets decode take
// either path).
START_TEST(kv_f32_bits_equal_gemv)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    uint64_t seed = 9000;
    for (size_t m = 1; m <= 9; m++)
        for (int a = 0; a < N_KV_SIZES; a++)
            for (int b = 0; b < N_KV_SIZES; b += 1 + (a + (int)m) % 2) {
                size_t n = kv_sizes[a], d = kv_sizes[b];
                rng g = { seed++ };
                kv_rows kv;
                kv_rows_make(&kv, MHSA_F32, n, d, d + seed % 3, &g, 0);
                size_t ldq = d + 3, ldp = n + 1;
                float *q = malloc(m * ldq * 4), *p = malloc(m * ldp * 4);
                float *s = malloc(m * n * 4), *o = malloc(m * d * 4);
                float *y = malloc((n > d ? n : d) * 4);
                fill_uniform(&g, q, m * ldq, -1, 1);
                fill_uniform(&g, p, m * ldp, 0, 1);
                fill_uniform(&g, o, m * d, -1, 1);
                k->kv_dot(m, n, d, q, ldq, kv.data, kv.ld, MHSA_F32, s, n);
                size_t bad = 0;
                for (size_t r = 0; r < m; r++) {
                    for (size_t j = 0; j < n; j++)
                        y[j] = NAN;
                    k->gemv_n(n, d, kv.data, kv.ld, q + r * ldq, y, 0.0f);
                    bad += memcmp(y, s + r * n, n * 4) != 0;
                }
                ck_assert_msg(bad == 0, "%s kv_dot f32 m=%zu n=%zu d=%zu: "
                              "%zu rows differ from gemv_n", k->name, m, n,
                              d, bad);
                float *o1 = malloc(m * d * 4);
                memcpy(o1, o, m * d * 4);
                k->kv_acc(m, n, d, p, ldp, kv.data, kv.ld, MHSA_F32, o1, d);
                for (size_t r = 0; r < m; r++) {
                    memcpy(y, o + r * d, d * 4);
                    k->gemv_t(n, d, p + r * ldp, kv.data, kv.ld, y);
                    bad += memcmp(y, o1 + r * d, d * 4) != 0;
                }
                ck_assert_msg(bad == 0, "%s kv_acc f32 m=%zu n=%zu d=%zu: "
                              "%zu rows differ from gemv_t", k->name, m, n,
                              d, bad);
                free(o1);
                free(q); free(p); free(s); free(o); free(y);
                kv_rows_free(&kv);
            }
}
END_TEST

// A row's bits are the same whatever m is: rows r0..M-1 of a call with M
// rows equal a call with just those rows, for every r0 and every dtype.
START_TEST(kv_rows_independent_of_m)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    // (m * d up to 9 * 520: kernels that keep per-call scratch of the
    // query rows must not switch methods with m)
    static const size_t nd[][2] = { { 1, 1 }, { 5, 3 }, { 9, 17 },
                                    { 33, 64 }, { 17, 128 }, { 40, 45 },
                                    { 7, 131 }, { 64, 96 }, { 6, 256 },
                                    { 5, 520 } };
    enum { M = 9 };
    uint64_t seed = 4242;
    for (int w = 0; w < 3; w++)
        for (size_t c = 0; c < sizeof nd / sizeof nd[0]; c++) {
            size_t n = nd[c][0], d = nd[c][1];
            rng g = { seed++ };
            kv_rows kv;
            kv_rows_make(&kv, kv_dtypes[w], n, d, d + c % 2, &g, 0);
            size_t ldq = d, ldp = n;
            float *q = malloc(M * ldq * 4), *p = malloc(M * ldp * 4);
            float *o0 = malloc(M * d * 4);
            float *s_all = malloc(M * n * 4), *o_all = malloc(M * d * 4);
            float *s_sub = malloc(M * n * 4), *o_sub = malloc(M * d * 4);
            fill_uniform(&g, q, M * ldq, -1, 1);
            fill_uniform(&g, p, M * ldp, 0, 1);
            fill_uniform(&g, o0, M * d, -1, 1);
            k->kv_dot(M, n, d, q, ldq, kv.data, kv.ld, kv.dt, s_all, n);
            memcpy(o_all, o0, M * d * 4);
            k->kv_acc(M, n, d, p, ldp, kv.data, kv.ld, kv.dt, o_all, d);
            for (size_t r0 = 0; r0 < M; r0++)
                for (size_t mm = 1; r0 + mm <= M; mm++) {
                    k->kv_dot(mm, n, d, q + r0 * ldq, ldq, kv.data, kv.ld,
                              kv.dt, s_sub, n);
                    memcpy(o_sub, o0 + r0 * d, mm * d * 4);
                    k->kv_acc(mm, n, d, p + r0 * ldp, ldp, kv.data, kv.ld,
                              kv.dt, o_sub, d);
                    ck_assert_msg(
                        memcmp(s_sub, s_all + r0 * n, mm * n * 4) == 0 &&
                        memcmp(o_sub, o_all + r0 * d, mm * d * 4) == 0,
                        "%s %s n=%zu d=%zu: rows %zu..%zu alone differ from "
                        "the same rows in a call with m=%d", k->name,
                        kv_dt_names[w], n, d, r0, r0 + mm - 1, M);
                }
            free(q); free(p); free(o0);
            free(s_all); free(o_all); free(s_sub); free(o_sub);
            kv_rows_free(&kv);
        }
}
END_TEST

// Small integers (exact in every dtype; every product and sum exact): every
// ISA gives exactly the scalar bits, whatever its order of summation.
START_TEST(kv_exact_on_small_integers)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    rng g = { 31337 };
    for (int t = 0; t < 60; t++) {
        int w = t % 3;
        size_t m = (size_t)rng_int(&g, 1, 9), n = (size_t)rng_int(&g, 1, 70);
        size_t d = (size_t)rng_int(&g, 1, 140);
        kv_rows kv;
        kv_rows_make(&kv, kv_dtypes[w], n, d, d + (size_t)(t % 4), &g, 1);
        float *q = malloc(m * d * 4), *p = malloc(m * n * 4);
        float *s1 = malloc(m * n * 4), *s2 = malloc(m * n * 4);
        float *o1 = malloc(m * d * 4), *o2 = malloc(m * d * 4);
        fill_small_ints(&g, q, m * d, 4);
        fill_small_ints(&g, p, m * n, 4);
        fill_small_ints(&g, o1, m * d, 8);
        memcpy(o2, o1, m * d * 4);
        k->kv_dot(m, n, d, q, d, kv.data, kv.ld, kv.dt, s1, n);
        mhsa_kernels_scalar.kv_dot(m, n, d, q, d, kv.data, kv.ld, kv.dt, s2,
                                   n);
        k->kv_acc(m, n, d, p, n, kv.data, kv.ld, kv.dt, o1, d);
        mhsa_kernels_scalar.kv_acc(m, n, d, p, n, kv.data, kv.ld, kv.dt, o2,
                                   d);
        ck_assert_msg(memcmp(s1, s2, m * n * 4) == 0, "%s kv_dot %s m=%zu "
                      "n=%zu d=%zu", k->name, kv_dt_names[w], m, n, d);
        ck_assert_msg(memcmp(o1, o2, m * d * 4) == 0, "%s kv_acc %s m=%zu "
                      "n=%zu d=%zu", k->name, kv_dt_names[w], m, n, d);
        free(q); free(p); free(s1); free(s2); free(o1); free(o2);
        kv_rows_free(&kv);
    }
}
END_TEST

// NaN or inf stored in a K/V row reaches exactly the results that read it,
// as in scalar: a NaN in K[j] makes s[., j] NaN; a NaN in V[j][i] makes
// o[., i] NaN even where p is 0 (rows with p == 0 are still read); an inf
// gives inf or NaN where scalar does.
START_TEST(kv_nan_and_inf_propagate)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { M = 5 };
    static const size_t nd[][2] = { { 3, 1 }, { 6, 9 }, { 19, 33 },
                                    { 11, 128 }, { 4, 67 } };
    uint64_t seed = 77;
    for (int w = 0; w < 3; w++)
        for (size_t c = 0; c < sizeof nd / sizeof nd[0]; c++)
            for (int what = 0; what < 3; what++) {
                size_t n = nd[c][0], d = nd[c][1];
                rng g = { seed++ };
                kv_rows kv;
                kv_rows_make(&kv, kv_dtypes[w], n, d, d, &g, 0);
                size_t jb = (size_t)rng_int(&g, 0, (int)n - 1);
                size_t ib = (size_t)rng_int(&g, 0, (int)d - 1);
                // what: 0 NaN, 1 +inf, 2 -inf, stored in the dtype
                float bad = what == 0 ? NAN : what == 1 ? INFINITY
                                                        : -INFINITY;
                mhsa_kernels_scalar.cvt_from_f32(
                    1, &bad,
                    (char *)kv.data + (jb * d + ib) * mhsa_dtype_size(kv.dt),
                    kv.dt);
                float *q = malloc(M * d * 4), *p = malloc(M * n * 4);
                float *s1 = malloc(M * n * 4), *s2 = malloc(M * n * 4);
                float *o1 = calloc(M * d, 4), *o2 = calloc(M * d, 4);
                fill_uniform(&g, q, M * d, -1, 1);
                fill_uniform(&g, p, M * n, 0, 1);
                p[0 * n + jb] = 0.0f;     // row 0 weights the bad row 0
                q[1 * d + ib] = 0.0f;     // row 1 multiplies it by 0
                k->kv_dot(M, n, d, q, d, kv.data, d, kv.dt, s1, n);
                mhsa_kernels_scalar.kv_dot(M, n, d, q, d, kv.data, d, kv.dt,
                                           s2, n);
                k->kv_acc(M, n, d, p, n, kv.data, d, kv.dt, o1, d);
                mhsa_kernels_scalar.kv_acc(M, n, d, p, n, kv.data, d, kv.dt,
                                           o2, d);
                size_t wrong = 0;
                for (size_t i = 0; i < M * n; i++)
                    wrong += isnan(s1[i]) != isnan(s2[i])
                          || (isinf(s2[i]) && s1[i] != s2[i])
                          || (isfinite(s2[i]) && !isfinite(s1[i]));
                for (size_t i = 0; i < M * d; i++)
                    wrong += isnan(o1[i]) != isnan(o2[i])
                          || (isinf(o2[i]) && o1[i] != o2[i])
                          || (isfinite(o2[i]) && !isfinite(o1[i]));
                // and the scalar reference behaves as described
                ck_assert(what != 0 || (isnan(s2[1 * n + jb])
                                        && isnan(o2[0 * d + ib])));
                for (size_t j = 0; j < n; j++)
                    wrong += j != jb && !isfinite(s1[j]);
                ck_assert_msg(wrong == 0, "%s %s n=%zu d=%zu bad %d at "
                              "(%zu, %zu): non-finite results differ from "
                              "scalar", k->name, kv_dt_names[w], n, d, what,
                              jb, ib);
                free(q); free(p); free(s1); free(s2); free(o1); free(o2);
                kv_rows_free(&kv);
            }
}
END_TEST

// gemv_n: a row's bits do not depend on n or on the rows beside it (the
// one-row products split rows between threads at any multiple of 8 rows,
// gemm.c; the plan of kernels/gemv_plan.h takes rows from several runs
// side by side, and the last n % 6 in groups of 4, 2, 1): every row of a
// call equals that row alone and in calls that start 1 and 5 rows later,
// for n that give the plan no step, one, several, and each remainder.
START_TEST(gemv_rows_independent_of_n)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t dd[] = { 1, 3, 8, 9, 17, 33, 64, 301 };
    static const size_t nn[] = { 5, 11, 13, 50 };
    rng r = { 91 + (uint64_t)_i };
    for (size_t ni = 0; ni < sizeof nn / sizeof *nn; ni++)
        for (size_t di = 0; di < sizeof dd / sizeof *dd; di++) {
            size_t n = nn[ni], d = dd[di], lda = d + 2;
            float *a = alloc_guarded(n * lda), *x = alloc_guarded(d);
            fill_uniform(&r, a, n * lda, -1, 1);
            fill_uniform(&r, x, d, -1, 1);
            float all[50], later[50], later5[50], one;
            k->gemv_n(n, d, a, lda, x, all, 0.0f);
            k->gemv_n(n - 1, d, a + lda, lda, x, later, 0.0f);
            k->gemv_n(n - 5, d, a + 5 * lda, lda, x, later5, 0.0f);
            for (size_t j = 0; j < n; j++) {
                k->gemv_n(1, d, a + j * lda, lda, x, &one, 0.0f);
                ck_assert_msg(memcmp(&one, &all[j], sizeof one) == 0 &&
                              (j < 1 ||
                               memcmp(&one, &later[j - 1], sizeof one) == 0) &&
                              (j < 5 ||
                               memcmp(&one, &later5[j - 5], sizeof one) == 0),
                              "%s gemv_n n %zu d %zu row %zu: bits depend on "
                              "the rows beside it", k->name, n, d, j);
            }
            free_guarded(a);
            free_guarded(x);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_gemv");
    TCase *tc = tcase_create("gemv");
    tcase_add_loop_test(tc, gemv_matches_reference, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv_exact_on_small_integers, 0, N_ISAS);
    tcase_add_loop_test(tc, gemv_rows_independent_of_n, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_matches_reference, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_f32_bits_equal_gemv, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_rows_independent_of_m, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_exact_on_small_integers, 0, N_ISAS);
    tcase_add_loop_test(tc, kv_nan_and_inf_propagate, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
