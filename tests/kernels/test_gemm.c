// test_gemm.c — the blocked SGEMM driver (src/gemm/gemm.c) on every ISA against
// a double naive reference: tile-edge and KC-edge shapes, all transpose
// combinations, odd leading dimensions, alpha / beta variants (beta 0 with
// NaN-poisoned C), seeded random shapes, prepacked B equal bit for bit to
// the plain path, and the same bits with 1, 2 and 3 OpenMP threads; A
// row-major (unpacked) and the folded bias equal bit for bit to packing; the
// few-rows product over 16-bit weights (mhsa_gemv_rows_16m) the same way.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"
#include "kernels/half.h"
#include "guard.h"
#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS)

enum { MAX_THREADS = 4 };
static const float sentinel = -555.5f;

typedef struct gcase {
    int ta, tb;
    size_t m, n, kd, lda, ldb, ldc;
    float alpha, beta;
    unsigned seed;
} gcase;

typedef struct scratch {
    mhsa_gemm_scratch s;
} scratch;

static void scratch_init(scratch *sc, const mhsa_kernels *k, size_t n)
{
    size_t af = mhsa_gemm_a_floats(k), bf = mhsa_gemm_b_floats(k, n);
    ck_assert(af > 0 && bf > 0);
    sc->s.a = malloc(MAX_THREADS * af * sizeof(float));
    sc->s.b = malloc(bf * sizeof(float));
    sc->s.b_floats = bf;
    sc->s.max_threads = MAX_THREADS;
}

static void scratch_free(scratch *sc)
{
    free(sc->s.a);
    free(sc->s.b);
}

// Default leading dimensions: odd pads so rows are never 32-byte aligned.
static void set_lds(gcase *t)
{
    t->lda = (t->ta ? t->m : t->kd) + 3;
    t->ldb = (t->tb ? t->kd : t->n) + 1;
    t->ldc = t->n + 7;
}

typedef struct bufs {
    float *a, *b, *c0, *c;
    size_t na, nb, nc;
} bufs;

static void bufs_make(bufs *x, const gcase *t)
{
    rng g = { t->seed };
    size_t arows = t->ta ? t->kd : t->m, brows = t->tb ? t->n : t->kd;
    x->na = arows * t->lda + 1;
    x->nb = brows * t->ldb + 1;
    x->nc = t->m * t->ldc;
    x->a = malloc(x->na * sizeof(float));
    x->b = malloc(x->nb * sizeof(float));
    x->c0 = malloc(x->nc * sizeof(float));
    x->c = alloc_guarded(x->nc);
    fill_uniform(&g, x->a, x->na, -1.0f, 1.0f);
    fill_uniform(&g, x->b, x->nb, -1.0f, 1.0f);
    fill_uniform(&g, x->c0, x->nc, -1.0f, 1.0f);
    for (size_t i = 0; i < t->m; i++) {
        for (size_t j = t->n; j < t->ldc; j++)
            x->c0[i * t->ldc + j] = sentinel;
        if (t->beta == 0.0f)   // never read
            fill_nan(x->c0 + i * t->ldc, t->n);
    }
    memcpy(x->c, x->c0, x->nc * sizeof(float));
}

static void bufs_free(bufs *x)
{
    free(x->a);
    free(x->b);
    free(x->c0);
    free_guarded(x->c);
}

static void run(const mhsa_kernels *k, const gcase *t, const bufs *x,
                const float *bp, float *c)
{
    scratch sc;
    scratch_init(&sc, k, t->n);
    mhsa_sgemm(k, &sc.s, t->ta, t->tb, t->m, t->n, t->kd, t->alpha, x->a,
               t->lda, x->b, t->ldb, bp, t->beta, c, t->ldc);
    scratch_free(&sc);
}

#define GC_FMT "isa %s ta %d tb %d m %zu n %zu k %zu lda %zu ldb %zu " \
               "ldc %zu alpha %g beta %g seed %u"
#define GC_ARGS(k, t) (k)->name, (t)->ta, (t)->tb, (t)->m, (t)->n, (t)->kd, \
    (t)->lda, (t)->ldb, (t)->ldc, (t)->alpha, (t)->beta, (t)->seed

// Runs one case and checks it against double, plus the C padding.
static void check_gemm(const mhsa_kernels *k, const gcase *t)
{
    bufs x;
    bufs_make(&x, t);
    run(k, t, &x, NULL, x.c);
    ck_assert_msg(guard_ok(x.c, x.nc), "canary hit: " GC_FMT, GC_ARGS(k, t));
    for (size_t i = 0; i < t->m; i++) {
        for (size_t j = t->n; j < t->ldc; j++)
            ck_assert_msg(x.c[i * t->ldc + j] == sentinel,
                          "C padding [%zu][%zu] written: " GC_FMT, i, j,
                          GC_ARGS(k, t));
        for (size_t j = 0; j < t->n; j++) {
            double s = 0, mag = 0;
            for (size_t kk = 0; kk < t->kd; kk++) {
                double av = t->ta ? x.a[kk * t->lda + i] : x.a[i * t->lda + kk];
                double bv = t->tb ? x.b[j * t->ldb + kk] : x.b[kk * t->ldb + j];
                s += av * bv;
                mag += fabs(av * bv);
            }
            double ref = t->alpha * s, amag = fabs(t->alpha) * mag;
            if (t->beta != 0.0f) {
                double cb = (double)t->beta * x.c0[i * t->ldc + j];
                ref += cb;
                amag += fabs(cb);
            }
            double tol = (double)(t->kd + 4) * 1.2e-7 * amag;
            float got = x.c[i * t->ldc + j];
            ck_assert_msg(fabs(got - ref) <= tol, "C[%zu][%zu] = %.9g want "
                          "%.9g tol %g: " GC_FMT, i, j, got, ref, tol,
                          GC_ARGS(k, t));
        }
    }
    bufs_free(&x);
}

// The table's blocking fits its tile (kernels.h): whole micro-panels per
// packed A block and per column chunk.
START_TEST(gemm_blocking_fits_tile)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    mhsa_gemm_blocking bl = k->blocking;
    ck_assert_msg(bl.kc > 0 && bl.mc > 0 && bl.nc > 0, "%s: a zero block",
                  k->name);
    ck_assert_msg(bl.mc % mr == 0, "%s: mc %zu not a multiple of mr %zu",
                  k->name, bl.mc, mr);
    ck_assert_msg(bl.nc % nr == 0, "%s: nc %zu not a multiple of nr %zu",
                  k->name, bl.nc, nr);
}
END_TEST

// Shapes from the tile and KC edges, every transpose combination cycling
// through alpha / beta variants.
START_TEST(gemm_edge_shapes)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, kc = k->blocking.kc;
    size_t ms[] = { 1, mr - 1, mr, mr + 1, 2 * mr - 1, 97, 131 };
    size_t ns[] = { 1, nr - 1, nr, nr + 1, 131 };
    size_t ks[] = { 1, 7, kc - 1, kc, kc + 1, 2 * kc + 1 };
    static const float ab[][2] = {
        { 1.0f, 0.0f }, { 1.0f, 1.0f }, { -0.5f, 0.5f }, { 2.0f, 0.0f },
        { 0.0f, 0.5f }, { 0.0f, 0.0f },
    };
    unsigned seed = 0, v = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                if (ms[mi] == 0 || ns[ni] == 0)
                    continue;
                gcase t = { 0 };
                t.m = ms[mi], t.n = ns[ni], t.kd = ks[ki];
                // big m x n only with small k, to keep the reference cheap
                if (t.m * t.n > 2000 && t.kd > kc)
                    continue;
                t.ta = (int)(v & 1), t.tb = (int)((v >> 1) & 1);
                t.alpha = ab[v % 6][0], t.beta = ab[v % 6][1];
                t.seed = ++seed;
                v++;
                set_lds(&t);
                check_gemm(k, &t);
            }
}
END_TEST

// All four transpose combinations on a few shapes, with tight and loose
// leading dimensions.
START_TEST(gemm_transposes)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t shapes[][3] = {
        { 13, 29, 41 }, { 97, 33, 131 }, { 7, 131, 300 }, { 64, 64, 64 },
    };
    unsigned seed = 100;
    for (size_t s = 0; s < 4; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int loose = 0; loose < 2; loose++) {
                    gcase t = { ta, tb, shapes[s][0], shapes[s][1],
                                shapes[s][2], 0, 0, 0, 0.75f,
                                loose ? 0.0f : 1.0f, ++seed };
                    set_lds(&t);
                    if (!loose) {
                        t.lda = ta ? t.m : t.kd;
                        t.ldb = tb ? t.kd : t.n;
                        t.ldc = t.n;
                    }
                    check_gemm(k, &t);
                }
}
END_TEST

// A few hundred seeded random shapes and parameters.
START_TEST(gemm_random_shapes)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const float alphas[] = { 1.0f, -1.0f, 0.5f, 3.0f };
    static const float betas[] = { 0.0f, 1.0f, 0.5f, -1.0f };
    // Quick mode (util.h): the first quarter; the edge shapes stay whole.
    unsigned n_rand = (unsigned)test_count(250);
    note_quick("a quarter of the random shapes");
    for (unsigned s = 1; s <= n_rand; s++) {
        rng g = { 77000 + s };
        gcase t = { 0 };
        t.ta = rng_int(&g, 0, 1), t.tb = rng_int(&g, 0, 1);
        t.m = (size_t)rng_int(&g, 1, 40);
        t.n = (size_t)rng_int(&g, 1, 40);
        t.kd = (size_t)rng_int(&g, 0, 300);
        t.alpha = alphas[rng_int(&g, 0, 3)];
        t.beta = betas[rng_int(&g, 0, 3)];
        t.seed = 77000 + s;
        set_lds(&t);
        t.lda += (size_t)rng_int(&g, 0, 4);
        t.ldb += (size_t)rng_int(&g, 0, 4);
        t.ldc += (size_t)rng_int(&g, 0, 4);
        check_gemm(k, &t);
    }
}
END_TEST

// B packed once with mhsa_gemm_prepack_b gives the same bits as packing
// inside the driver.
START_TEST(gemm_prepacked_b_bitwise)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t shapes[][3] = {
        { 1, 1, 1 }, { 37, 53, 255 }, { 130, 140, 257 }, { 6, 129, 600 },
        { 50, 17, 512 },
    };
    unsigned seed = 300;
    for (size_t s = 0; s < 5; s++)
        for (int tb = 0; tb < 2; tb++) {
            gcase t = { (int)(s & 1), tb, shapes[s][0], shapes[s][1],
                        shapes[s][2], 0, 0, 0, 1.5f, (s & 1) ? 0.0f : 0.5f,
                        ++seed };
            set_lds(&t);
            bufs x;
            bufs_make(&x, &t);
            size_t pf = mhsa_gemm_prepacked_floats(k, t.kd, t.n);
            ck_assert(pf > 0);
            float *bp = malloc(pf * sizeof(float));
            mhsa_gemm_prepack_b(k, t.kd, t.n, x.b, t.ldb, tb, bp);
            float *c2 = alloc_guarded(x.nc);
            memcpy(c2, x.c0, x.nc * sizeof(float));
            run(k, &t, &x, NULL, x.c);
            run(k, &t, &x, bp, c2);
            ck_assert_msg(guard_ok(c2, x.nc)
                          && memcmp(x.c, c2, x.nc * sizeof(float)) == 0,
                          "prepacked differs: " GC_FMT, GC_ARGS(k, &t));
            free(bp);
            free_guarded(c2);
            bufs_free(&x);
        }
    check_gemm(k, &(gcase){ 0, 0, 3, 5, 0, 3, 6, 12, 1.0f, 0.5f, 1 });
}
END_TEST

// Same bits with 1, 2 and 3 threads (work split fixed by shapes only).
START_TEST(gemm_threads_bitwise)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t shapes[][3] = {
        { 300, 200, 300 }, { 133, 257, 70 }, { 40, 400, 513 },
    };
    unsigned seed = 400;
    for (size_t s = 0; s < 3; s++) {
        gcase t = { (int)(s & 1), (int)(s == 2), shapes[s][0], shapes[s][1],
                    shapes[s][2], 0, 0, 0, 1.0f, s == 1 ? 1.0f : 0.0f,
                    ++seed };
        set_lds(&t);
        bufs x;
        bufs_make(&x, &t);
        float *c2 = alloc_guarded(x.nc), *c3 = alloc_guarded(x.nc);
        memcpy(c2, x.c0, x.nc * sizeof(float));
        memcpy(c3, x.c0, x.nc * sizeof(float));
        omp_set_num_threads(1);
        run(k, &t, &x, NULL, x.c);
        omp_set_num_threads(2);
        run(k, &t, &x, NULL, c2);
        omp_set_num_threads(3);
        run(k, &t, &x, NULL, c3);
        ck_assert_msg(memcmp(x.c, c2, x.nc * sizeof(float)) == 0
                      && memcmp(x.c, c3, x.nc * sizeof(float)) == 0,
                      "thread count changed the bits: " GC_FMT,
                      GC_ARGS(k, &t));
        ck_assert(all_finite(x.c, x.nc));
        free_guarded(c2);
        free_guarded(c3);
        bufs_free(&x);
    }
}
END_TEST

// mhsa_gemv_rows_16m (a few rows of x through 16-bit W, by kv_dot): every
// element against a double reference over the widened weights, beta 0 (y
// poisoned with NaN, never read) and 1; each row of the result with the
// bits of that row of x alone (m = 1) and of a call over a later part of
// W (n shifted by 3 rows); the same bits on 1, 2 and 3 threads (shapes
// above the work threshold, so the rows are split); odd leading
// dimensions, m from 1 to MHSA_FEW_ROWS_16.
START_TEST(gemv_rows_16m_reference_and_bits)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t shapes[][3] = {   // m, n, d
        { 1, 7, 9 },   { 2, 70, 33 },   { 3, 65, 576 }, { 5, 130, 17 },
        { 16, 200, 576 }, { 7, 67, 1001 }, { MHSA_FEW_ROWS_16, 150, 128 },
    };
    static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16 };
    rng r = { 71 + (uint64_t)_i };
    for (int w = 0; w < 2; w++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int bi = 0; bi < 2; bi++) {
                size_t m = shapes[si][0], n = shapes[si][1];
                size_t d = shapes[si][2], ldw = d + 1, ldx = d + 3;
                size_t ldy = n + 5, ny = (m - 1) * ldy + n;
                float beta = (float)bi;
                mhsa_dtype dt = dts[w];
                uint16_t *wt = malloc(((n - 1) * ldw + d) * sizeof *wt);
                ck_assert(wt);
                for (size_t j = 0; j < n; j++)
                    for (size_t i = 0; i < d; i++) {
                        float v = rng_uniform(&r, -1, 1);
                        wt[j * ldw + i] = dt == MHSA_F16 ? mhsa_f32_to_f16(v)
                                                         : mhsa_f32_to_bf16(v);
                    }
                float *x = alloc_guarded((m - 1) * ldx + d);
                fill_uniform(&r, x, (m - 1) * ldx + d, -1, 1);
                float *y0 = alloc_guarded(ny), *y[3];
                fill_uniform(&r, y0, ny, -1, 1);
                for (int t = 0; t < 3; t++) {
                    y[t] = alloc_guarded(ny);
                    for (size_t e = 0; e < ny; e++)
                        y[t][e] = beta == 0.0f ? NAN : y0[e];
                    scratch sc;
                    scratch_init(&sc, k, n);
                    sc.s.max_threads = t + 1;
                    omp_set_num_threads(t + 1);
                    mhsa_gemv_rows_16m(k, &sc.s, m, n, d, wt, dt, ldw, x, ldx,
                                       y[t], ldy, beta);
                    scratch_free(&sc);
                }
                omp_set_num_threads(1);
                ck_assert_msg(memcmp(y[0], y[1], ny * sizeof(float)) == 0 &&
                              memcmp(y[0], y[2], ny * sizeof(float)) == 0,
                              "%s gemv_rows_16m m %zu n %zu d %zu: thread "
                              "count changed the bits", k->name, m, n, d);
                scratch sc;
                scratch_init(&sc, k, n);
                sc.s.max_threads = 1;
                for (size_t q = 0; q < m; q++) {
                    float *one = alloc_guarded(n), *later = alloc_guarded(n);
                    for (size_t j = 0; j < n; j++)
                        one[j] = later[j] = y0[q * ldy + j];
                    mhsa_gemv_rows_16m(k, &sc.s, 1, n, d, wt, dt, ldw,
                                       x + q * ldx, ldx, one, n, beta);
                    mhsa_gemv_rows_16m(k, &sc.s, 1, n - 3, d, wt + 3 * ldw,
                                       dt, ldw, x + q * ldx, ldx, later + 3,
                                       n, beta);
                    for (size_t j = 0; j < n; j++) {
                        float got = y[0][q * ldy + j];
                        double want = beta == 0.0f ? 0.0
                                                   : (double)y0[q * ldy + j];
                        double mag = 1.0;
                        for (size_t i = 0; i < d; i++) {
                            double p = (double)(dt == MHSA_F16
                                                    ? mhsa_f16_to_f32(
                                                          wt[j * ldw + i])
                                                    : mhsa_bf16_to_f32(
                                                          wt[j * ldw + i])) *
                                       x[q * ldx + i];
                            want += p;
                            mag += fabs(p);
                        }
                        ck_assert_msg(
                            fabs(got - want) <= 4e-7 * mag * (1 + log2((double)d)) &&
                                memcmp(&got, &one[j], sizeof got) == 0 &&
                                (j < 3 ||
                                 memcmp(&got, &later[j], sizeof got) == 0),
                            "%s gemv_rows_16m %s m %zu n %zu d %zu beta %g "
                            "(%zu, %zu): %.9g, alone %.9g, want %.9g",
                            k->name, dt == MHSA_F16 ? "f16" : "bf16", m, n, d,
                            (double)beta, q, j, (double)got, (double)one[j],
                            want);
                    }
                    ck_assert(guard_ok(one, n) && guard_ok(later, n));
                    free_guarded(one);
                    free_guarded(later);
                }
                scratch_free(&sc);
                for (int t = 0; t < 3; t++) {
                    ck_assert(guard_ok(y[t], ny));
                    free_guarded(y[t]);
                }
                ck_assert(guard_ok(x, (m - 1) * ldx + d));
                free_guarded(x);
                free_guarded(y0);
                free(wt);
            }
}
END_TEST


// The driver with A row-major (sgemm_ukr_ra, unpacked) and with A packed,
// forced through copies of the table (ra_max_panels huge / 0): the same
// bits, on 1 and 2 threads; and mhsa_sgemm_bias (the bias added by the
// tiles, on either path) bit for bit against presetting C's rows to the
// bias and beta 1. Shapes over tile, block and KC edges, lda > k, alpha
// != 1, beta 0 / 1 / other, prepacked and packed-per-call B.
START_TEST(gemm_row_major_a_bitwise)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    if (!k->sgemm_ukr_ra) {
        printf("isa %s: no row-major tile (the GEMM packs A)\n", k->name);
        return;
    }
    mhsa_kernels kra = *k, kpk = *k;
    kra.ra_max_panels = 1 << 20;
    kpk.ra_max_panels = 0;
    static const size_t shapes[][3] = {
        { 1, 1, 1 }, { 5, 3, 0 }, { 7, 13, 2 }, { 96, 96, 32 },
        { 97, 33, 31 }, { 140, 150, 257 }, { 13, 200, 600 }, { 290, 17, 64 },
        // whole AVX-512 tiles, half-panel and 1.5-panel widths
        { 12, 32, 1 }, { 25, 16, 5 }, { 36, 48, 13 },
    };
    static const float alphas[] = { 1.0f, 0.35355339f, -1.5f };
    static const float betas[] = { 0.0f, 1.0f, 0.5f };
    unsigned seed = 900;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int v = 0; v < 4; v++) {
            gcase t = { 0, v & 1, shapes[si][0], shapes[si][1], shapes[si][2],
                        0, 0, 0, alphas[(si + v) % 3], betas[(si + v) % 3],
                        ++seed };
            set_lds(&t);
            t.lda = t.kd + (size_t)v * 2 + 1;
            bufs x;
            bufs_make(&x, &t);
            size_t pf = mhsa_gemm_prepacked_floats(k, t.kd, t.n);
            float *bp = malloc((pf + 1) * sizeof(float));
            mhsa_gemm_prepack_b(k, t.kd, t.n, x.b, t.ldb, t.tb, bp);
            const float *use_bp = (v & 2) ? bp : NULL;
            float *bias = malloc(t.n * sizeof(float));
            rng g = { seed };
            fill_uniform(&g, bias, t.n, -1.0f, 1.0f);
            float *c1 = alloc_guarded(x.nc), *c2 = alloc_guarded(x.nc);
            memcpy(c1, x.c0, x.nc * sizeof(float));
            memcpy(c2, x.c0, x.nc * sizeof(float));
            omp_set_num_threads(1);
            run(&kpk, &t, &x, use_bp, x.c);
            run(&kra, &t, &x, use_bp, c1);
            omp_set_num_threads(2);
            run(&kra, &t, &x, use_bp, c2);
            ck_assert_msg(guard_ok(c1, x.nc) && guard_ok(c2, x.nc) &&
                          memcmp(x.c, c1, x.nc * sizeof(float)) == 0 &&
                          memcmp(x.c, c2, x.nc * sizeof(float)) == 0,
                          "row-major A differs from packed: " GC_FMT,
                          GC_ARGS(k, &t));
            // bias: preset rows + beta 1 (packed) against the fold on
            // both paths
            scratch sc;
            scratch_init(&sc, k, t.n);
            memcpy(x.c, x.c0, x.nc * sizeof(float));
            for (size_t i = 0; i < t.m; i++)
                memcpy(x.c + i * t.ldc, bias, t.n * sizeof(float));
            omp_set_num_threads(1);
            mhsa_sgemm_cd(&kpk, MHSA_F32, &sc.s, 0, t.tb, t.m, t.n, t.kd,
                          t.alpha, x.a, t.lda, x.b, MHSA_F32, t.ldb, use_bp,
                          1.0f, x.c, t.ldc);
            for (int path = 0; path < 2; path++) {
                memcpy(c1, x.c0, x.nc * sizeof(float));
                omp_set_num_threads(path + 1);
                mhsa_sgemm_bias(path ? &kra : &kpk, MHSA_F32, &sc.s, 0, t.tb,
                                t.m, t.n, t.kd, t.alpha, x.a, t.lda, x.b,
                                MHSA_F32, t.ldb, use_bp, bias, c1, t.ldc);
                ck_assert_msg(guard_ok(c1, x.nc) &&
                              memcmp(x.c, c1, x.nc * sizeof(float)) == 0,
                              "bias fold (%s) differs from preset rows: "
                              GC_FMT, path ? "row-major" : "packed",
                              GC_ARGS(k, &t));
            }
            omp_set_num_threads(1);
            scratch_free(&sc);
            free(bp);
            free(bias);
            free_guarded(c1);
            free_guarded(c2);
            bufs_free(&x);
        }
}
END_TEST


// op(B) of exactly nr columns, rows nr apart, is read in place as its own
// packed panel (gemm.c: b_is_one_panel). B sits against a guard page, so
// a read past its last row faults; the bits must equal prepacked B's (a
// copy made by the packer) over KC edges, both A layouts, 1 and 2 threads,
// and widths beside nr (ldb = n), which must still be packed. Every table,
// and the emulated AVX-512 one beside a native one.
START_TEST(gemm_b_in_place)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, kc = k->blocking.kc;
    size_t ms[] = { 1, mr, 97 };
    size_t ns[] = { nr - 1, nr, nr + 1 };
    size_t ks[] = { 1, 7, kc - 1, kc, kc + 1, 2 * kc + 3 };
    unsigned seed = 1300;
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t ni = 0; ni < 3; ni++)
            for (size_t ki = 0; ki < 6; ki++) {
                gcase t = { (int)(ki & 1), 0, ms[mi], ns[ni], ks[ki],
                            0, 0, 0, ki & 2 ? 0.5f : 1.0f,
                            mi == 1 ? 1.0f : 0.0f, ++seed };
                set_lds(&t);
                t.ldb = t.n;
                bufs x;
                bufs_make(&x, &t);
                float *b = guard_copy(t.kd * t.n, GUARD_AFTER, x.b, 1);
                size_t pf = mhsa_gemm_prepacked_floats(k, t.kd, t.n);
                float *bp = malloc(pf * sizeof(float));
                mhsa_gemm_prepack_b(k, t.kd, t.n, b, t.ldb, 0, bp);
                float *c1 = alloc_guarded(x.nc), *c2 = alloc_guarded(x.nc);
                memcpy(c1, x.c0, x.nc * sizeof(float));
                memcpy(c2, x.c0, x.nc * sizeof(float));
                bufs in_place = x;
                in_place.b = b;
                omp_set_num_threads(1);
                run(k, &t, &x, bp, x.c);
                run(k, &t, &in_place, NULL, c1);
                omp_set_num_threads(2);
                run(k, &t, &in_place, NULL, c2);
                omp_set_num_threads(1);
                ck_assert_msg(guard_ok(c1, x.nc) && guard_ok(c2, x.nc) &&
                              memcmp(x.c, c1, x.nc * sizeof(float)) == 0 &&
                              memcmp(x.c, c2, x.nc * sizeof(float)) == 0,
                              "B in place differs from prepacked: " GC_FMT,
                              GC_ARGS(k, &t));
                free(bp);
                guard_free(b);
                free_guarded(c1);
                free_guarded(c2);
                bufs_free(&x);
            }
}
END_TEST

// mhsa_tile_gemm_ra (attention's unpacked A) against mhsa_tile_pack_a +
// mhsa_tile_gemm bit for bit: several tiles each way, alpha = a softmax
// scale, beta 0 and 1, lda > k.
START_TEST(tile_gemm_ra_bitwise)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k || !mhsa_tile_has_ra(k))
        return;
    static const size_t shapes[][3] = {
        { 12, 12, 8 }, { 1, 5, 16 }, { 17, 40, 33 }, { 64, 64, 64 },
    };
    for (size_t si = 0; si < 4; si++)
        for (int bi = 0; bi < 2; bi++) {
            size_t m = shapes[si][0], n = shapes[si][1], kd = shapes[si][2];
            size_t lda = kd + 3, ldc = n + 1;
            rng g = { 1000 + si * 2 + (unsigned)bi };
            float *a = malloc(((m - 1) * lda + kd) * sizeof(float));
            float *b = malloc(kd * n * sizeof(float));
            fill_uniform(&g, a, (m - 1) * lda + kd, -2.0f, 2.0f);
            fill_uniform(&g, b, kd * n, -2.0f, 2.0f);
            float *ap = malloc(mhsa_tile_a_floats(k, m, kd) * sizeof(float));
            float *bp = malloc(mhsa_tile_b_floats(k, kd, n) * sizeof(float));
            float *c1 = alloc_guarded(m * ldc), *c2 = alloc_guarded(m * ldc);
            fill_uniform(&g, c1, m * ldc, -1.0f, 1.0f);
            memcpy(c2, c1, m * ldc * sizeof(float));
            float alpha = 0.35355339f, beta = bi ? 1.0f : 0.0f;
            mhsa_tile_pack_b(k, kd, n, b, n, 0, MHSA_F32, bp);
            mhsa_tile_pack_a(k, m, kd, a, lda, 0, alpha, MHSA_F32, ap);
            mhsa_tile_gemm(k, m, n, kd, ap, bp, c1, ldc, beta);
            mhsa_tile_gemm_ra(k, m, n, kd, a, lda, alpha, bp, c2, ldc, beta);
            ck_assert_msg(guard_ok(c2, m * ldc) &&
                          memcmp(c1, c2, m * ldc * sizeof(float)) == 0,
                          "tile_gemm_ra differs: isa %s m %zu n %zu k %zu "
                          "beta %g", k->name, m, n, kd, beta);
            free(a);
            free(b);
            free(ap);
            free(bp);
            free_guarded(c1);
            free_guarded(c2);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("gemm");
    LOOP(tc, gemm_blocking_fits_tile);
    LOOP(tc, gemm_edge_shapes);
    LOOP(tc, gemm_transposes);
    LOOP(tc, gemm_random_shapes);
    LOOP(tc, gemm_prepacked_b_bitwise);
    tcase_add_loop_test(tc, gemm_b_in_place, 0, N_ISAS + 1);
    LOOP(tc, gemv_rows_16m_reference_and_bits);
    LOOP(tc, gemm_threads_bitwise);
    LOOP(tc, gemm_row_major_a_bitwise);
    LOOP(tc, tile_gemm_ra_bitwise);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
