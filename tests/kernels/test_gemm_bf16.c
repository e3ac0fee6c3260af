// test_gemm_bf16.c — compute dtype BF16 in the GEMM driver (mhsa_sgemm_cd)
// and the attention tile helpers (mhsa_tile_pack_a / _b + mhsa_tile_gemm)
// on every ISA: each C element against a double-precision sum of the exact
// products of the operands rounded to bf16 (bf16(alpha op(A)) times
// bf16(op(B)), the definition shared with the native kernels), held to the
// fp32 accumulation's error bound; the bound is tight enough that the
// unrounded fp32 product misses it (checked: the test can fail). Shapes at
// tile and KC edges, K odd and not a multiple of 32, odd M / N, all
// transposes, alpha folded in before rounding, beta; NaN, inf and
// subnormal inputs (a subnormal is zero; inf and NaN propagate as in the
// reference); F32 compute is mhsa_sgemm_dt bit for bit; BF16 gives the same
// bits on 1, 2 and 3 threads and with 16-bit B.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"
#include "kernels/half.h"
#include "util.h"

enum { MAX_THREADS = 3 };

// The reference's rounding, written from the definition with half.h's
// cache conversion (RNE, NaN quiet), not with the library's helper; a
// subnormal input is zero (API.md 0.3), a subnormal never results.
static double ref_round(float f)
{
    if (f != 0.0f && fabsf(f) < 1.17549435e-38f)
        return signbit(f) ? -0.0 : 0.0;
    return (double)mhsa_bf16_to_f32(mhsa_f32_to_bf16(f));
}

typedef struct gcase {
    int ta, tb;
    size_t m, n, kd;
    float alpha, beta;
} gcase;

typedef struct problem {
    gcase g;
    size_t lda, ldb, ldc;
    float *a, *b, *c0;
} problem;

static float A(const problem *p, size_t i, size_t l)
{
    return p->g.ta ? p->a[l * p->lda + i] : p->a[i * p->lda + l];
}

static float Bv(const problem *p, size_t l, size_t j)
{
    return p->g.tb ? p->b[j * p->ldb + l] : p->b[l * p->ldb + j];
}

static problem make(const gcase *g, uint64_t seed)
{
    problem p = { *g, (g->ta ? g->m : g->kd) + 3, (g->tb ? g->kd : g->n) + 1,
                  g->n + 5, NULL, NULL, NULL };
    rng r = { seed };
    size_t na = (g->ta ? g->kd : g->m) * p.lda, nb = (g->tb ? g->n : g->kd) *
                p.ldb, nc = g->m * p.ldc;
    p.a = malloc((na + 1) * 4);
    p.b = malloc((nb + 1) * 4);
    p.c0 = malloc((nc + 1) * 4);
    fill_uniform(&r, p.a, na + 1, -1, 1);
    fill_uniform(&r, p.b, nb + 1, -1, 1);
    fill_uniform(&r, p.c0, nc + 1, -1, 1);
    if (g->beta == 0.0f)
        fill_nan(p.c0, nc);   // never read
    return p;
}

static void problem_free(problem *p)
{
    free(p->a);
    free(p->b);
    free(p->c0);
}

static mhsa_gemm_scratch scratch_of(const mhsa_kernels *k, size_t n)
{
    mhsa_gemm_scratch s = { malloc(MAX_THREADS * mhsa_gemm_a_floats(k) * 4),
                            malloc(mhsa_gemm_b_floats(k, n) * 4),
                            mhsa_gemm_b_floats(k, n), MAX_THREADS };
    return s;
}

// C element (i, j) against the reference: with rounding == 1 the products
// of rounded operands, else the unrounded fp32 operands. Returns how far
// outside the fp32 accumulation bound it is (<= 1: inside); NaN/inf must
// match the reference's.
static double check_elem(const problem *p, const float *c, size_t i,
                         size_t j, int rounding, const char *what)
{
    double sum = 0.0, mag = 0.0;
    for (size_t l = 0; l < p->g.kd; l++) {
        float av = p->g.alpha * A(p, i, l);   // fp32, as pack_a folds it
        double x = rounding ? ref_round(av) : (double)av;
        double y = rounding ? ref_round(Bv(p, l, j)) : (double)Bv(p, l, j);
        sum += x * y;
        mag += fabs(x * y);
    }
    double want = sum, cin = 0.0;
    if (p->g.beta != 0.0f) {
        cin = (double)(p->g.beta * p->c0[i * p->ldc + j]);
        want += cin;
        mag += fabs(cin);
    }
    double got = c[i * p->ldc + j];
    if (!isfinite(want) || !isfinite(got)) {
        ck_assert_msg((isnan(want) && isnan(got)) || want == got,
                      "%s: C[%zu][%zu] = %g, reference %g", what, i, j, got,
                      want);
        return 0.0;
    }
    // fp32 sums of kd + 1 terms: each step rounds by at most 2^-24 of the
    // running magnitude; 2^-23 per term covers any order, plus one ulp.
    double bound = (double)(p->g.kd + 2) * ldexp(1.0, -23) * mag +
                   ldexp(1.0, -126);
    return fabs(got - want) / bound;
}

static double check_all(const problem *p, const float *c, int rounding,
                        const char *what)
{
    double worst = 0.0;
    for (size_t i = 0; i < p->g.m; i++)
        for (size_t j = 0; j < p->g.n; j++) {
            double e = check_elem(p, c, i, j, rounding, what);
            worst = e > worst ? e : worst;
        }
    return worst;
}

static float *run_cd(const mhsa_kernels *k, const problem *p, mhsa_dtype cd,
                     int threads, const void *b, mhsa_dtype bdt)
{
    const gcase *g = &p->g;
    mhsa_gemm_scratch s = scratch_of(k, g->n);
    float *c = malloc((g->m * p->ldc + 1) * 4);
    memcpy(c, p->c0, (g->m * p->ldc + 1) * 4);
    omp_set_num_threads(threads);
    mhsa_sgemm_cd(k, cd, &s, g->ta, g->tb, g->m, g->n, g->kd, g->alpha,
                  p->a, p->lda, b ? b : p->b, bdt, p->ldb, NULL, g->beta, c,
                  p->ldc);
    free(s.a);
    free(s.b);
    return c;
}

static void shapes(const mhsa_kernels *k, gcase *out, size_t *n_out)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, kc = k->blocking.kc;
    size_t ms[] = { 1, mr - 1, mr + 1, 2 * mr + 3, 37 };
    size_t ns[] = { 1, nr - 1, nr + 1, 2 * nr + 5 };
    size_t ks[] = { 1, 7, 31, 33, 65, 97, kc - 1, kc + 3 };
    size_t c = 0;
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t d = 0; d < 8; d++) {
                size_t v = a * 32 + b * 8 + d;
                gcase g = { (int)(v % 2), (int)(v / 2 % 2), ms[a], ns[b],
                            ks[d], v % 3 == 0 ? 1.0f : 0.37f,
                            v % 5 == 0 ? 0.0f : (v % 5 == 1 ? 1.0f : -0.5f) };
                if (test_quick() && v % 3)
                    continue;
                out[c++] = g;
            }
    *n_out = c;
}

START_TEST(sgemm_bf16_exact_products)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    gcase gs[160];
    size_t ng;
    shapes(k, gs, &ng);
    double worst = 0.0, worst_f32 = 0.0;
    for (size_t s = 0; s < ng; s++) {
        problem p = make(&gs[s], 100 + s);
        char what[160];
        snprintf(what, sizeof what, "%s bf16 gemm ta %d tb %d %zux%zux%zu "
                 "alpha %g beta %g", k->name, p.g.ta, p.g.tb, p.g.m, p.g.n,
                 p.g.kd, (double)p.g.alpha, (double)p.g.beta);
        float *c1 = run_cd(k, &p, MHSA_BF16, 1, NULL, MHSA_F32);
        double e = check_all(&p, c1, 1, what);
        ck_assert_msg(e <= 1.0, "%s: %.3g x the fp32 accumulation bound",
                      what, e);
        worst = e > worst ? e : worst;
        if (p.g.kd >= 31) {   // the unrounded product is far outside it
            double ef = check_all(&p, c1, 0, what);
            worst_f32 = ef > worst_f32 ? ef : worst_f32;
        }
        // 2 and 3 threads: the same bits
        for (int nt = 2; nt <= MAX_THREADS; nt++) {
            float *cn = run_cd(k, &p, MHSA_BF16, nt, NULL, MHSA_F32);
            ck_assert_msg(!memcmp(c1, cn, p.g.m * p.ldc * 4),
                          "%s: %d threads changed the bits", what, nt);
            free(cn);
        }
        // F32 compute is mhsa_sgemm_dt, bit for bit
        float *cf = run_cd(k, &p, MHSA_F32, 1, NULL, MHSA_F32);
        float *cd = malloc((p.g.m * p.ldc + 1) * 4);
        memcpy(cd, p.c0, (p.g.m * p.ldc + 1) * 4);
        mhsa_gemm_scratch sc = scratch_of(k, p.g.n);
        mhsa_sgemm_dt(k, &sc, p.g.ta, p.g.tb, p.g.m, p.g.n, p.g.kd,
                      p.g.alpha, p.a, p.lda, p.b, MHSA_F32, p.ldb, NULL,
                      p.g.beta, cd, p.ldc);
        ck_assert_msg(!memcmp(cf, cd, p.g.m * p.ldc * 4), "%s: F32 compute "
                      "differs from mhsa_sgemm_dt", what);
        free(sc.a);
        free(sc.b);
        free(cf);
        free(cd);
        free(c1);
        problem_free(&p);
    }
    printf("%s: bf16 gemm worst %.3f of the bound; the fp32 product reaches "
           "%.1f x it\n", k->name, worst, worst_f32);
    ck_assert_msg(worst_f32 > 4.0, "%s: the check cannot tell rounded from "
                  "unrounded operands (%.2f)", k->name, worst_f32);
}
END_TEST

// A BF16-stored B is read as stored: the same bits as fp32 B holding the
// widened values.
START_TEST(sgemm_bf16_with_16bit_b)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    gcase g = { 0, 1, 29, 2 * (size_t)k->nr + 3, 77, 0.5f, 1.0f };
    problem p = make(&g, 7);
    size_t nb = p.g.n * p.ldb;
    uint16_t *b16 = malloc(nb * 2);
    for (size_t i = 0; i < nb; i++) {
        b16[i] = mhsa_f32_to_bf16(p.b[i]);
        p.b[i] = mhsa_bf16_to_f32(b16[i]);
    }
    float *c32 = run_cd(k, &p, MHSA_BF16, 1, NULL, MHSA_F32);
    float *c16 = run_cd(k, &p, MHSA_BF16, 2, b16, MHSA_BF16);
    ck_assert_msg(!memcmp(c32, c16, p.g.m * p.ldc * 4), "%s: BF16-stored B "
                  "differs from its fp32 widening", k->name);
    ck_assert(check_all(&p, c32, 1, "16-bit B") <= 1.0);
    free(b16); free(c32); free(c16);
    problem_free(&p);
}
END_TEST

// NaN, inf and subnormals among the operands: a subnormal is zero (before
// and after rounding), inf and NaN reach exactly the elements the
// reference says; a value that rounds past bf16's largest is inf.
START_TEST(sgemm_bf16_special_values)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    gcase g = { 0, 0, 13, (size_t)k->nr + 3, 35, 1.0f, 0.0f };
    problem p = make(&g, 9);
    p.a[0 * p.lda + 3] = NAN;
    p.a[2 * p.lda + 5] = INFINITY;
    p.a[4 * p.lda + 1] = 1e-40f;          // subnormal: zero
    p.a[5 * p.lda + 2] = -3e-39f;
    p.b[7 * p.ldb + 2] = -INFINITY;
    p.b[9 * p.ldb + 4] = 2e-39f;
    p.a[6 * p.lda + 0] = 3.40282e38f;     // rounds to bf16 +inf
    float *c = run_cd(k, &p, MHSA_BF16, 1, NULL, MHSA_F32);
    ck_assert(check_all(&p, c, 1, "special values") <= 1.0);
    ck_assert(isinf(c[6 * p.ldc + 1]) || isnan(c[6 * p.ldc + 1]));
    // The subnormal-only problem equals the one with zeros there, bit for
    // bit.
    problem z = make(&g, 9);
    z.a[4 * z.lda + 1] = 0.0f;
    z.a[5 * z.lda + 2] = -0.0f;
    z.b[9 * z.ldb + 4] = 0.0f;
    problem s = make(&g, 9);
    s.a[4 * s.lda + 1] = 1e-40f;
    s.a[5 * s.lda + 2] = -3e-39f;
    s.b[9 * s.ldb + 4] = 2e-39f;
    float *cz = run_cd(k, &z, MHSA_BF16, 1, NULL, MHSA_F32);
    float *cs = run_cd(k, &s, MHSA_BF16, 1, NULL, MHSA_F32);
    ck_assert_msg(!memcmp(cz, cs, g.m * z.ldc * 4), "%s: subnormal "
                  "operands are not zero", k->name);
    free(c); free(cz); free(cs);
    problem_free(&p); problem_free(&z); problem_free(&s);
}
END_TEST

// The attention's tile helpers: packed (and rounded) whole, multiplied by
// the micro-kernel; the same reference and bound.
START_TEST(tile_bf16_exact_products)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t dims[][3] = { { 1, 1, 1 }, { mr + 1, nr - 1, 33 },
                         { 2 * mr + 1, 2 * nr + 1, 64 }, { 7, 3, 97 },
                         { 72, 128, 65 } };
    double worst_f32 = 0.0;
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
        for (int t = 0; t < 4; t++) {
            gcase g = { t & 1, t >> 1, dims[d][0], dims[d][1], dims[d][2],
                        t == 3 ? 0.125f : 1.0f, t == 2 ? 1.0f : 0.0f };
            problem p = make(&g, 50 + d * 4 + (size_t)t);
            float *ap = malloc(mhsa_tile_a_floats(k, g.m, g.kd) * 4);
            float *bp = malloc(mhsa_tile_b_floats(k, g.kd, g.n) * 4);
            float *c = malloc((g.m * p.ldc + 1) * 4);
            memcpy(c, p.c0, (g.m * p.ldc + 1) * 4);
            mhsa_tile_pack_a(k, g.m, g.kd, p.a, p.lda, g.ta, g.alpha,
                             MHSA_BF16, ap);
            mhsa_tile_pack_b(k, g.kd, g.n, p.b, p.ldb, g.tb, MHSA_BF16, bp);
            mhsa_tile_gemm(k, g.m, g.n, g.kd, ap, bp, c, p.ldc, g.beta);
            char what[128];
            snprintf(what, sizeof what, "%s bf16 tile ta %d tb %d %zux%zux%zu",
                     k->name, g.ta, g.tb, g.m, g.n, g.kd);
            double e = check_all(&p, c, 1, what);
            ck_assert_msg(e <= 1.0, "%s: %.3g x the bound", what, e);
            if (g.kd >= 33) {
                double ef = check_all(&p, c, 0, what);
                worst_f32 = ef > worst_f32 ? ef : worst_f32;
            }
            free(ap); free(bp); free(c);
            problem_free(&p);
        }
    ck_assert_msg(worst_f32 > 4.0, "%s: tiles look unrounded", k->name);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm_bf16");
    TCase *tc = tcase_create("gemm_bf16");
    tcase_add_loop_test(tc, sgemm_bf16_exact_products, 0, N_ISAS);
    tcase_add_loop_test(tc, sgemm_bf16_with_16bit_b, 0, N_ISAS);
    tcase_add_loop_test(tc, sgemm_bf16_special_values, 0, N_ISAS);
    tcase_add_loop_test(tc, tile_bf16_exact_products, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
