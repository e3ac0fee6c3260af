// test_kernel_sgemm.c — pack_a, pack_b and the sgemm micro-kernel of every
// ISA: packed layouts bit for bit against a naive packer, the micro-kernel
// against a double reference and against scalar (bitwise on small-integer
// inputs), edge tiles, beta 0 / 1 / 0.5 with NaN-poisoned C, canaries; the
// row-major-A tile against the packed one bit for bit (special values too).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS)

static const float sentinel = -555.5f;

// op(X)[i][kk] for an (r x c) operand stored trans ? (c x r) : (r x c).
static float op_at(const float *x, size_t ld, int trans, size_t i, size_t kk)
{
    return trans ? x[kk * ld + i] : x[i * ld + kk];
}

// A source matrix of exactly the elements an (r x c) op(X) with ld needs,
// so ASan catches any read past it.
static float *alloc_src(size_t r, size_t c, size_t ld, int trans, rng *g)
{
    size_t outer = trans ? c : r, inner = trans ? r : c;
    size_t nel = outer == 0 ? 1 : (outer - 1) * ld + inner + (inner == 0);
    float *x = malloc(nel * sizeof(float));
    fill_uniform(g, x, nel, -3.0f, 3.0f);
    return x;
}

START_TEST(pack_a_layout)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t ks[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33 };
    static const float alphas[] = { 1.0f, -0.5f, 3.0f, 0.1f };
    size_t mr = (size_t)k->mr;
    unsigned seed = 0;
    for (size_t m = 1; m <= mr; m++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (int trans = 0; trans < 2; trans++)
                for (int ai = 0; ai < 4; ai++) {
                    size_t kd = ks[ki];
                    size_t lda = (trans ? m : kd) + 3;
                    rng g = { ++seed };
                    float *a = alloc_src(m, kd, lda, trans, &g);
                    size_t np = mr * kd;
                    float *ap = alloc_guarded(np), *want = malloc(
                        (np + 1) * sizeof(float));
                    fill_nan(ap, np);
                    for (size_t kk = 0; kk < kd; kk++)
                        for (size_t i = 0; i < mr; i++)
                            want[kk * mr + i] = i < m
                                ? alphas[ai] * op_at(a, lda, trans, i, kk)
                                : 0.0f;
                    k->pack_a(m, kd, a, lda, trans, alphas[ai], ap);
                    ck_assert_msg(guard_ok(ap, np) && memcmp(ap, want,
                                  np * sizeof(float)) == 0,
                                  "pack_a isa %s m %zu k %zu trans %d alpha "
                                  "%g seed %u", k->name, m, kd, trans,
                                  alphas[ai], seed);
                    free(a);
                    free(want);
                    free_guarded(ap);
                }
}
END_TEST

START_TEST(pack_b_layout)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t ks[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 33 };
    size_t nr = (size_t)k->nr;
    unsigned seed = 500;
    for (size_t n = 1; n <= nr; n++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (int trans = 0; trans < 2; trans++) {
                size_t kd = ks[ki];
                size_t ldb = (trans ? kd : n) + 5;
                rng g = { ++seed };
                // op(B) is kd x n: trans ? B (n x kd) : B (kd x n).
                float *b = alloc_src(kd, n, ldb, trans, &g);
                size_t np = nr * kd;
                float *bp = alloc_guarded(np), *want = malloc(
                    (np + 1) * sizeof(float));
                fill_nan(bp, np);
                for (size_t kk = 0; kk < kd; kk++)
                    for (size_t j = 0; j < nr; j++)
                        want[kk * nr + j] = j < n
                            ? (trans ? b[j * ldb + kk] : b[kk * ldb + j])
                            : 0.0f;
                k->pack_b(kd, n, b, ldb, trans, bp);
                ck_assert_msg(guard_ok(bp, np) && memcmp(bp, want,
                              np * sizeof(float)) == 0,
                              "pack_b isa %s n %zu k %zu trans %d seed %u",
                              k->name, n, kd, trans, seed);
                free(b);
                free(want);
                free_guarded(bp);
            }
}
END_TEST

// C (m x n, ldc) = beta C + A (m x kd) B (kd x n) through kern's packers and
// micro-kernel, tile by tile (one tile when m <= mr and n <= nr).
static void run_tiles(const mhsa_kernels *kern, size_t m, size_t n,
                      size_t kd, const float *a, const float *b, float beta,
                      float *c, size_t ldc)
{
    size_t mr = (size_t)kern->mr, nr = (size_t)kern->nr;
    float *ap = malloc((mr * kd + 1) * sizeof(float));
    float *bp = malloc((nr * kd + 1) * sizeof(float));
    for (size_t i = 0; i < m; i += mr)
        for (size_t j = 0; j < n; j += nr) {
            size_t h = m - i < mr ? m - i : mr, w = n - j < nr ? n - j : nr;
            kern->pack_a(h, kd, a + i * kd, kd, 0, 1.0f, ap);
            kern->pack_b(kd, w, b + j, n, 0, bp);
            kern->sgemm_ukr(kd, ap, bp, c + i * ldc + j, ldc, h, w, beta,
                            NULL);
        }
    free(ap);
    free(bp);
}

typedef struct ukr_case {
    size_t m, n, kd;
    float beta;
    int ints;
    unsigned seed;
} ukr_case;

// Runs one case on k and on scalar; checks k against the double reference
// (k-scaled bound, or exact for integers), against scalar, and that nothing
// outside the m x n block of C changed.
static void check_case(const mhsa_kernels *k, const ukr_case *t)
{
    size_t m = t->m, n = t->n, kd = t->kd, ldc = n + 5;
    rng g = { t->seed };
    float *a = malloc((m * kd + 1) * sizeof(float));
    float *b = malloc((kd * n + 1) * sizeof(float));
    float *c0 = malloc(m * ldc * sizeof(float));
    if (t->ints) {
        fill_small_ints(&g, a, m * kd, 4);
        fill_small_ints(&g, b, kd * n, 4);
        fill_small_ints(&g, c0, m * ldc, 8);
    } else {
        fill_uniform(&g, a, m * kd, -1.0f, 1.0f);
        fill_uniform(&g, b, kd * n, -1.0f, 1.0f);
        fill_uniform(&g, c0, m * ldc, -1.0f, 1.0f);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = n; j < ldc; j++)
            c0[i * ldc + j] = sentinel;
    if (t->beta == 0.0f)   // never read: NaN must not leak in
        for (size_t i = 0; i < m; i++)
            fill_nan(c0 + i * ldc, n);

    float *ck = alloc_guarded(m * ldc), *cs = alloc_guarded(m * ldc);
    memcpy(ck, c0, m * ldc * sizeof(float));
    memcpy(cs, c0, m * ldc * sizeof(float));
    run_tiles(k, m, n, kd, a, b, t->beta, ck, ldc);
    run_tiles(&mhsa_kernels_scalar, m, n, kd, a, b, t->beta, cs, ldc);

#define CASE_FMT "isa %s m %zu n %zu k %zu beta %g %s seed %u"
#define CASE_ARGS k->name, m, n, kd, t->beta, t->ints ? "ints" : "floats", \
                  t->seed
    ck_assert_msg(guard_ok(ck, m * ldc), "canary hit: " CASE_FMT, CASE_ARGS);
    for (size_t i = 0; i < m; i++) {
        for (size_t j = n; j < ldc; j++)
            ck_assert_msg(ck[i * ldc + j] == sentinel,
                          "wrote C[%zu][%zu] outside n: " CASE_FMT, i, j,
                          CASE_ARGS);
        for (size_t j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (size_t kk = 0; kk < kd; kk++) {
                double p = (double)a[i * kd + kk] * b[kk * n + j];
                ref += p;
                mag += fabs(p);
            }
            if (t->beta != 0.0f) {
                ref += (double)t->beta * c0[i * ldc + j];
                mag += fabs((double)t->beta * c0[i * ldc + j]);
            }
            float got = ck[i * ldc + j], sc = cs[i * ldc + j];
            double tol = t->ints ? 0.0 : (double)(kd + 2) * 1.2e-7 * mag;
            ck_assert_msg(fabs(got - ref) <= tol,
                          "C[%zu][%zu] = %.9g, want %.9g (tol %g): " CASE_FMT,
                          i, j, got, ref, tol, CASE_ARGS);
            if (t->ints)
                ck_assert_msg(memcmp(&got, &sc, sizeof got) == 0,
                              "C[%zu][%zu] = %.9g, scalar %.9g: " CASE_FMT,
                              i, j, got, sc, CASE_ARGS);
            else
                ck_assert_msg(fabs(got - sc) <= 2 * tol,
                              "C[%zu][%zu] = %.9g, scalar %.9g: " CASE_FMT,
                              i, j, got, sc, CASE_ARGS);
        }
    }
#undef CASE_FMT
#undef CASE_ARGS
    free(a);
    free(b);
    free(c0);
    free_guarded(ck);
    free_guarded(cs);
}

// m, n in {1, t-1, t} (t+1 clips to t in one tile), k edge values around
// the unroll and KC, beta 0 / 1 / 0.5, integer and float inputs.
START_TEST(ukr_edges)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t ks[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17,
                                 63, 64, 65, 255, 256, 257 };
    static const float betas[] = { 0.0f, 1.0f, 0.5f };
    size_t ms[3] = { 1, (size_t)k->mr - 1, (size_t)k->mr };
    size_t ns[3] = { 1, (size_t)k->nr - 1, (size_t)k->nr };
    unsigned seed = 0;
    for (int mi = 0; mi < 3; mi++)
        for (int ni = 0; ni < 3; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                for (int bi = 0; bi < 3; bi++)
                    for (int ints = 0; ints < 2; ints++) {
                        ukr_case t = { ms[mi], ns[ni], ks[ki], betas[bi],
                                       ints, ++seed };
                        check_case(k, &t);
                    }
}
END_TEST

// Seeded random tile shapes inside the tile.
START_TEST(ukr_random)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const float betas[] = { 0.0f, 1.0f, 0.5f, -2.0f };
    for (unsigned s = 1; s <= 60; s++) {
        rng g = { 9000 + s };
        ukr_case t = { (size_t)rng_int(&g, 1, k->mr),
                       (size_t)rng_int(&g, 1, k->nr),
                       (size_t)rng_int(&g, 0, 300), betas[s % 4],
                       (int)(s % 2), 9000 + s };
        check_case(k, &t);
    }
}
END_TEST


// ---- the row-major-A tile (sgemm_ukr_ra) against the packed one ----------
// (and the transposed-A tile, sgemm_ukr_ta, where the table has one)

// Special values planted in A, B or C: NaN, both infinities, signed zeros,
// huge (products overflow) and tiny (products go subnormal, read as zero).
static float special(rng *g)
{
    static const float v[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f,
                               3.0e38f, -3.0e38f, 1.0e-30f };
    return v[rng_int(g, 0, (int)(sizeof v / sizeof v[0]) - 1)];
}

static unsigned float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

// Table _i when it runs here and has a row-major tile, else NULL (and a
// line saying why).
static const mhsa_kernels *ra_kernels_or_skip(int i)
{
    const mhsa_kernels *k = kernels_or_skip(i);
    if (k && !k->sgemm_ukr_ra) {
        printf("isa %s: no row-major tile (the GEMM packs A)\n", k->name);
        return NULL;
    }
    return k;
}

typedef struct ra_case {
    size_t m, n, kd, lda;
    float alpha, beta;
    int bias, specials;   // specials: 0 none, 1 in A, 2 in B, 3 in both
    unsigned seed;
} ra_case;

// One tile both ways, bit for bit: the packed tile over pack_a(alpha) with
// C preset to the bias rows (beta 1) when bias, against sgemm_ukr_ra on A
// row-major (exactly m rows of lda, the last one kd long, so ASan sees any
// read of rows >= m or past kd).
static void check_ra(const mhsa_kernels *k, const ra_case *t)
{
    size_t m = t->m, n = t->n, kd = t->kd, lda = t->lda, ldc = n + 3;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    rng g = { t->seed };
    size_t na = (m - 1) * lda + kd + (kd == 0);
    float *a = malloc(na * sizeof(float));
    float *b = malloc((kd * n + 1) * sizeof(float));
    float *bias = malloc(n * sizeof(float)), *c0 = malloc(m * ldc * 4);
    fill_uniform(&g, a, na, -2.0f, 2.0f);
    fill_uniform(&g, b, kd * n + 1, -2.0f, 2.0f);
    fill_uniform(&g, bias, n, -2.0f, 2.0f);
    fill_uniform(&g, c0, m * ldc, -2.0f, 2.0f);
    for (int s = 0; s < 6 && kd > 0; s++) {
        if (t->specials & 1)
            a[(size_t)rng_int(&g, 0, (int)m - 1) * lda +
              (size_t)rng_int(&g, 0, (int)kd - 1)] = special(&g);
        if (t->specials & 2)
            b[(size_t)rng_int(&g, 0, (int)(kd * n) - 1)] = special(&g);
    }
    if (t->specials) {
        c0[0] = special(&g);
        bias[n - 1] = special(&g);
    }
    if (t->beta == 0.0f && !t->bias)   // never read
        for (size_t i = 0; i < m; i++)
            fill_nan(c0 + i * ldc, n);
    float *ap = malloc((mr * kd + 1) * sizeof(float));
    float *bp = malloc((nr * kd + 1) * sizeof(float));
    k->pack_a(m, kd, a, lda, 0, t->alpha, ap);
    k->pack_b(kd, n, b, n, 0, bp);
    float *cp = alloc_guarded(m * ldc), *cr = alloc_guarded(m * ldc);
    memcpy(cp, c0, m * ldc * sizeof(float));
    memcpy(cr, c0, m * ldc * sizeof(float));
    if (t->bias)
        for (size_t i = 0; i < m; i++)
            memcpy(cp + i * ldc, bias, n * sizeof(float));
    k->sgemm_ukr(kd, ap, bp, cp, ldc, m, n, t->bias ? 1.0f : t->beta, NULL);
    k->sgemm_ukr_ra(kd, a, lda, t->alpha, bp, cr, ldc, m, n, t->beta,
                    t->bias ? bias : NULL);
    ck_assert(guard_ok(cp, m * ldc) && guard_ok(cr, m * ldc));
    if (k->sgemm_ukr_ta) {
        // The same A transposed in place: kd rows of ldt, the last one m
        // long, so ASan sees any read of columns >= m.
        size_t ldt = m + t->lda - kd, nt = kd ? (kd - 1) * ldt + m : 1;
        float *at = malloc(nt * sizeof(float));
        fill_nan(at, nt);
        for (size_t i = 0; i < m; i++)
            for (size_t kk = 0; kk < kd; kk++)
                at[kk * ldt + i] = a[i * lda + kk];
        float *ct = alloc_guarded(m * ldc);
        memcpy(ct, c0, m * ldc * sizeof(float));
        k->sgemm_ukr_ta(kd, at, ldt, t->alpha, bp, ct, ldc, m, n, t->beta,
                        t->bias ? bias : NULL);
        ck_assert(guard_ok(ct, m * ldc));
        for (size_t e = 0; e < m * ldc; e++)
            ck_assert_msg(memcmp(&cp[e], &ct[e], sizeof(float)) == 0,
                          "C[%zu][%zu]: packed 0x%08x, transposed A 0x%08x: "
                          "isa %s m %zu n %zu k %zu ldt %zu alpha %g beta %g "
                          "bias %d specials %d seed %u", e / ldc, e % ldc,
                          float_bits(cp[e]), float_bits(ct[e]), k->name, m,
                          n, kd, ldt, t->alpha, t->beta, t->bias,
                          t->specials, t->seed);
        free(at);
        free_guarded(ct);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < ldc; j++) {
            size_t e = i * ldc + j;
            ck_assert_msg(memcmp(&cp[e], &cr[e], sizeof(float)) == 0,
                          "C[%zu][%zu]: packed %a (0x%08x), row-major %a "
                          "(0x%08x): isa %s m %zu n %zu k %zu lda %zu alpha "
                          "%g beta %g bias %d specials %d seed %u", i, j,
                          cp[e], float_bits(cp[e]), cr[e],
                          float_bits(cr[e]), k->name, m, n, kd, lda,
                          t->alpha, t->beta, t->bias, t->specials, t->seed);
        }
    free(a);
    free(b);
    free(bias);
    free(c0);
    free(ap);
    free(bp);
    free_guarded(cp);
    free_guarded(cr);
}

// Every table with a row-major tile: edge shapes (every row count 1..mr;
// 1, primes, nr/2 - 1 .. nr/2 + 1 (tiles of half a panel or less may run
// half the accumulators: AVX2, AVX-512), nr - 1, nr columns; k 0, 1,
// primes, the unroll and KC edges), lda > k, alpha 1 / != 1, beta 0 / 1 /
// other, bias, special values.
START_TEST(ra_matches_packed_bitwise)
{
    const mhsa_kernels *k = ra_kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t ks[] = { 0, 1, 2, 3, 5, 7, 8, 13, 16, 31, 64, 97 };
    static const float alphas[] = { 1.0f, -0.5f, 0.35355339f, 3.0f };
    static const float betas[] = { 0.0f, 1.0f, 0.5f };
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t ns[] = { 1, 3, 7, nr > 9 ? 11 : nr - 1, nr / 2 - 1, nr / 2,
                    nr / 2 + 1, nr - 1, nr };
    unsigned seed = 70000;
    for (size_t m = 1; m <= mr; m++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                seed++;
                ra_case t = { m, ns[ni] < nr ? ns[ni] : nr, ks[ki],
                              ks[ki] + (seed % 3) * 5, alphas[seed % 4],
                              betas[seed % 3], (int)(seed % 5 == 0),
                              (int)(seed % 4), seed };
                check_ra(k, &t);
            }
    int count = test_count(400);
    for (int s = 0; s < count; s++) {
        rng g = { 80000u + (unsigned)s };
        ra_case t = { (size_t)rng_int(&g, 1, k->mr),
                      (size_t)rng_int(&g, 1, k->nr),
                      (size_t)rng_int(&g, 0, 300), 0,
                      rng_uniform(&g, -2.0f, 2.0f), betas[s % 3],
                      rng_int(&g, 0, 3) == 0, rng_int(&g, 0, 3),
                      80000u + (unsigned)s };
        t.lda = t.kd + (size_t)rng_int(&g, 0, 9);
        if (s % 4 == 0)
            t.alpha = 1.0f;
        check_ra(k, &t);
    }
}
END_TEST

static float nan_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// Several NaNs in one chain: x86 returns the first NaN operand of an FMA
// in the instruction's own operand order, so a tile whose compiler picked
// vfmadd132 in one instance and vfmadd231 in the other returns different
// NaNs (payload, sign) for the same element when A and B (or the running
// sum and a factor) are both NaN. The single NaN of special() cannot show
// that; here the NaNs differ by payload and sign: depth step 0 or 1 of A
// (per row) and of B (per column) NaN in each of the 16 combinations.
START_TEST(ra_matches_packed_nan_payloads)
{
    const mhsa_kernels *k = ra_kernels_or_skip(_i);
    if (!k)
        return;
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, kd = 3;
    float *a = malloc(mr * kd * sizeof(float));
    float *b = malloc(kd * nr * sizeof(float));
    float *ap = malloc((mr * kd + 1) * sizeof(float));
    float *bp = malloc((nr * kd + 1) * sizeof(float));
    float *cp = malloc(mr * nr * sizeof(float));
    float *cr = malloc(mr * nr * sizeof(float));
    float *at = malloc(kd * mr * sizeof(float));
    float *ct = malloc(mr * nr * sizeof(float));
    static const float alphas[] = { 1.0f, 0.5f };
    for (int sc = 0; sc < 16; sc++)
        for (int al = 0; al < 2; al++)
            for (size_t m = 1; m <= mr; m++)
                for (size_t n = nr / 2; n <= nr; n += nr / 2) {
                    for (size_t i = 0; i < m; i++) {
                        a[i * kd] = sc & 1 ? nan_bits(0x7fc00011u + i) : 1.0f;
                        a[i * kd + 1] =
                            sc & 2 ? nan_bits(0xffc00021u + i) : 1.0f;
                        a[i * kd + 2] = 2.0f;
                    }
                    for (size_t j = 0; j < n; j++) {
                        b[j] = sc & 4 ? nan_bits(0xffc00031u + j) : 1.0f;
                        b[n + j] = sc & 8 ? nan_bits(0x7fc00041u + j) : 1.0f;
                        b[2 * n + j] = 3.0f;
                    }
                    k->pack_a(m, kd, a, kd, 0, alphas[al], ap);
                    k->pack_b(kd, n, b, n, 0, bp);
                    k->sgemm_ukr(kd, ap, bp, cp, nr, m, n, 0.0f, NULL);
                    k->sgemm_ukr_ra(kd, a, kd, alphas[al], bp, cr, nr, m, n,
                                    0.0f, NULL);
                    if (k->sgemm_ukr_ta) {   // A transposed in place
                        for (size_t i = 0; i < m; i++)
                            for (size_t kk = 0; kk < kd; kk++)
                                at[kk * mr + i] = a[i * kd + kk];
                        k->sgemm_ukr_ta(kd, at, mr, alphas[al], bp, ct, nr,
                                        m, n, 0.0f, NULL);
                        for (size_t i = 0; i < m; i++)
                            for (size_t j = 0; j < n; j++)
                                ck_assert_msg(
                                    float_bits(cp[i * nr + j]) ==
                                        float_bits(ct[i * nr + j]),
                                    "C[%zu][%zu]: packed 0x%08x, "
                                    "transposed A 0x%08x: isa %s m %zu n "
                                    "%zu NaN case %d", i, j,
                                    float_bits(cp[i * nr + j]),
                                    float_bits(ct[i * nr + j]), k->name, m,
                                    n, sc);
                    }
                    for (size_t i = 0; i < m; i++)
                        for (size_t j = 0; j < n; j++) {
                            size_t e = i * nr + j;
                            ck_assert_msg(
                                float_bits(cp[e]) == float_bits(cr[e]),
                                "C[%zu][%zu]: packed 0x%08x, row-major "
                                "0x%08x: isa %s m %zu n %zu alpha %g NaN "
                                "case %d", i, j, float_bits(cp[e]),
                                float_bits(cr[e]), k->name, m, n,
                                alphas[al], sc);
                        }
                }
    free(a);
    free(b);
    free(ap);
    free(bp);
    free(cp);
    free(at);
    free(ct);
    free(cr);
}
END_TEST

// The packed tile's bias row, on every table: the bits of beta == 1 over C
// rows preset to the bias, C itself never read (NaN-filled) and nothing
// outside m x n written; every row count 1..mr, column counts off the
// vector width, depths 0, 1, primes and the unrolls' edges, special
// values in A, B and the bias, and a beta the bias must override.
START_TEST(ukr_bias_is_preset_rows)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t ks[] = { 0, 1, 2, 3, 7, 8, 13, 16, 31, 64, 97 };
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    size_t ns[] = { 1, 3, nr / 2 - 1, nr / 2, nr / 2 + 1, nr - 1, nr };
    unsigned seed = 91000;
    for (size_t m = 1; m <= mr; m++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                size_t n = ns[ni], kd = ks[ki], ldc = n + 5;
                rng g = { ++seed };
                float *a = malloc((mr * kd + 1) * sizeof(float));
                float *b = malloc((kd * n + 1) * sizeof(float));
                float bias[64];
                fill_uniform(&g, a, mr * kd + 1, -2.0f, 2.0f);
                fill_uniform(&g, b, kd * n + 1, -2.0f, 2.0f);
                fill_uniform(&g, bias, n, -2.0f, 2.0f);
                if (seed % 3 == 0 && kd > 0) {
                    a[rng_int(&g, 0, (int)(m * kd) - 1)] = special(&g);
                    b[rng_int(&g, 0, (int)(kd * n) - 1)] = special(&g);
                    bias[rng_int(&g, 0, (int)n - 1)] = special(&g);
                }
                float *ap = malloc((mr * kd + 1) * sizeof(float));
                float *bp = malloc((nr * kd + 1) * sizeof(float));
                k->pack_a(m, kd, a, kd, 0, 1.0f, ap);
                k->pack_b(kd, n, b, n, 0, bp);
                float *cb = alloc_guarded(m * ldc), *cr = alloc_guarded(m * ldc);
                for (size_t i = 0; i < m; i++) {
                    fill_nan(cb + i * ldc, ldc);
                    fill_nan(cr + i * ldc, ldc);
                    memcpy(cr + i * ldc, bias, n * sizeof(float));
                }
                k->sgemm_ukr(kd, ap, bp, cb, ldc, m, n, 0.5f, bias);
                k->sgemm_ukr(kd, ap, bp, cr, ldc, m, n, 1.0f, NULL);
                ck_assert(guard_ok(cb, m * ldc) && guard_ok(cr, m * ldc));
                for (size_t e = 0; e < m * ldc; e++)
                    ck_assert_msg(float_bits(cb[e]) == float_bits(cr[e]),
                                  "C[%zu][%zu]: bias row 0x%08x, preset "
                                  "rows 0x%08x: isa %s m %zu n %zu k %zu",
                                  e / ldc, e % ldc, float_bits(cb[e]),
                                  float_bits(cr[e]), k->name, m, n, kd);
                free(a);
                free(b);
                free(ap);
                free(bp);
                free_guarded(cb);
                free_guarded(cr);
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_sgemm");
    TCase *tc = tcase_create("sgemm");
    LOOP(tc, pack_a_layout);
    LOOP(tc, pack_b_layout);
    LOOP(tc, ukr_edges);
    LOOP(tc, ukr_random);
    LOOP(tc, ra_matches_packed_bitwise);
    LOOP(tc, ra_matches_packed_nan_payloads);
    LOOP(tc, ukr_bias_is_preset_rows);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
