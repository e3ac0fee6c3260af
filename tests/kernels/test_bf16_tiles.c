// test_bf16_tiles.c — the bf16 GEMM tiles (kernels.h: mhsa_bf16_tiles) and
// their driver (gemm/gemm_bf16.h), on every tile set this machine can run:
// natively where the CPU has AVX512-BF16 / AMX, else the test-only
// emulated sets of the emulated AVX-512 table (each line printed says
// which). Against a double-precision reference of the rounded operands
// (bf16(alpha*A), bf16(B), rounded as vcvtne2ps2bf16): tile edges, depths
// odd and not multiples of 2 or 32, odd m and n, all transposes, B stored
// F32 / F16 / BF16 and fp32-prepacked, beta 0 / 1 / other, NaN, inf and
// subnormal inputs; the driver bitwise across 1, 2 and 3 threads; the
// blocking within the fp32 scratch; choosing a set the CPU lacks is
// MHSA_ERR_UNSUPPORTED.
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "gemm/gemm.h"
#include "gemm/gemm_bf16.h"
#include "kernels/half.h"
#include "util.h"

enum { MAX_THREADS = 3 };

// Every table this test build has that lists bf16 sets (native ones even
// where the CPU cannot run them: fits is data only).
static const mhsa_kernels *const with_sets[] = {
#if MHSA_HAVE_AVX512
    &mhsa_kernels_avx512,
#endif
    NULL,
};

// The table whose set `name` runs here, preferring native, or NULL after
// saying why; prints which ran.
static const mhsa_kernels *table_for(const char *name,
                                     const mhsa_bf16_tiles **tp)
{
    const mhsa_kernels *cands[3] = { 0 };
    int nc = 0;
    const mhsa_kernels *k = mhsa_kernels_for(MHSA_ISA_AVX512);
    if (k)
        cands[nc++] = k;
    const mhsa_kernels *em = emulated_table(MHSA_ISA_AVX512);
    if (em && em != k && mhsa__cpu_features()->avx2_fma_f16c)
        cands[nc++] = em;
    for (int i = 0; i < nc; i++) {
        if (!cands[i]->bf16)
            continue;
        for (const mhsa_bf16_tiles *const *t = cands[i]->bf16; *t; t++)
            if (strcmp((*t)->name, name) == 0 &&
                mhsa_gemm_bf16_runnable(*t)) {
                printf("bf16 tiles %s: %s\n", name,
                       (*t)->emulated ? "emulated (this CPU lacks them)"
                                      : "native");
                // mhsa__bf16_select looks for the set among the tables
                // dispatch gives: the emulated one too (even where
                // MHSA_TEST_EMULATION=0 kept run_suite from installing it).
                if ((*t)->emulated)
                    mhsa__set_stand_in(cands[i]);
                *tp = *t;
                return cands[i];
            }
    }
    printf("skip: bf16 tiles %s: neither native nor emulated here\n", name);
    return NULL;
}

static const char *const set_names[] = { "amx_bf16", "avx512_bf16" };
enum { N_SETS = 2 };

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float fbits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

// vcvtne2ps2bf16's rounding (SDM), as a float.
static float rbf16(float x)
{
    uint32_t u = bits(x), e = (u >> 23) & 0xff, mant = u & 0x7fffff;
    uint32_t h;
    if (e == 0)
        h = (u >> 16) & 0x8000;
    else if (e == 0xff)
        h = mant ? (u >> 16) | 0x40 : u >> 16;
    else
        h = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    return fbits(h << 16);
}

// The value op(B)[kk][j] holds (B stored as dt).
static float b_at(const void *b, mhsa_dtype dt, size_t ldb, int tb,
                  size_t kk, size_t j)
{
    size_t idx = tb ? j * ldb + kk : kk * ldb + j;
    if (dt == MHSA_F32)
        return ((const float *)b)[idx];
    uint16_t h = ((const uint16_t *)b)[idx];
    return dt == MHSA_F16 ? mhsa_f16_to_f32(h) : fbits((uint32_t)h << 16);
}

// Checks c (m x n, ldc) against the double reference of the rounded
// operands; c0 is C before the call.
static void check_ref(const char *what, size_t m, size_t n, size_t k,
                      float alpha, const float *a, size_t lda, int ta,
                      const void *b, mhsa_dtype dt, size_t ldb, int tb,
                      float beta, const float *c0, const float *c,
                      size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0, mag = 0;
            for (size_t kk = 0; kk < k; kk++) {
                float av = ta ? a[kk * lda + i] : a[i * lda + kk];
                double x = rbf16(alpha * av);
                double y = rbf16(b_at(b, dt, ldb, tb, kk, j));
                sum += x * y;
                mag += fabs(x * y);
            }
            if (beta != 0.0f) {
                sum += (double)beta * c0[i * ldc + j];
                mag += fabs((double)beta * c0[i * ldc + j]);
            }
            float got = c[i * ldc + j];
            if (isnan(sum)) {
                ck_assert_msg(isnan(got), "%s: C[%zu][%zu] = %g, want NaN",
                              what, i, j, got);
                continue;
            }
            if (isinf(sum)) {
                ck_assert_msg(got == (float)sum, "%s: C[%zu][%zu] = %g, "
                              "want %g", what, i, j, got, sum);
                continue;
            }
            double tol = ldexp(mag, -24) * (double)(k + 4) +
                         ldexp((double)(k + 2), -126);
            ck_assert_msg(fabs(got - sum) <= tol,
                          "%s: C[%zu][%zu] = %.9g, want %.9g (tol %g)",
                          what, i, j, got, sum, tol);
        }
}

static void fill_b(rng *r, void *b, mhsa_dtype dt, size_t count)
{
    float *tmp = malloc(count * sizeof(float) + 4);
    fill_uniform(r, tmp, count, -1.0f, 1.0f);
    if (dt == MHSA_F32)
        memcpy(b, tmp, count * sizeof(float));
    else
        for (size_t i = 0; i < count; i++)
            ((uint16_t *)b)[i] = dt == MHSA_F16
                               ? mhsa_f32_to_f16(tmp[i])
                               : (uint16_t)(bits(tmp[i]) >> 16);
    free(tmp);
}

// ---- the micro-kernel on one block ---------------------------------------

START_TEST(ukr_matches_reference)
{
    const mhsa_bf16_tiles *t = NULL;
    if (!table_for(set_names[_i], &t))
        return;
    size_t mr = (size_t)t->mr, nr = (size_t)t->nr, kg = (size_t)t->kgran;
    const size_t ms[] = { 1, 2, mr - 1, mr };
    const size_t ns[] = { 1, 3, 17, nr - 1, nr };
    const size_t ks[] = { 1, 2, 3, 15, 31, 32, 33, 63, 64, 65, 100, 257 };
    const float betas[] = { 0.0f, 1.0f, -0.75f };
    const mhsa_dtype dts[] = { MHSA_F32, MHSA_F16, MHSA_BF16 };
    rng r = { 21 };
    size_t cases = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        size_t k = ks[ki], m = ms[mi], n = ns[ni];
        int ta = (int)((ki + mi) & 1), tb = (int)((ki + ni) & 1);
        mhsa_dtype dt = dts[(ki + mi + ni) % 3];
        float beta = betas[(mi + 2 * ni + ki) % 3];
        float alpha = (ki % 2) ? 1.0f : -1.5f;
        size_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 3;
        size_t ldc = nr + 5, kpad = (k + kg - 1) / kg * kg;
        float *a = alloc_guarded((ta ? k : m) * lda);
        void *b = alloc_guarded(((tb ? n : k) * ldb + 1) / 1);
        float *c = alloc_guarded(mr * ldc), *c0 = malloc(mr * ldc * 4);
        uint16_t *ap = (uint16_t *)alloc_guarded(mr * kpad / 2 + 1);
        uint16_t *bp = (uint16_t *)alloc_guarded(nr * kpad / 2 + 1);
        fill_uniform(&r, a, (ta ? k : m) * lda, -1.0f, 1.0f);
        fill_b(&r, b, dt, (tb ? n : k) * ldb);
        fill_uniform(&r, c, mr * ldc, -1.0f, 1.0f);
        if (beta == 0.0f)   // never read: NaN inside the block
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j++)
                    c[i * ldc + j] = NAN;
        memcpy(c0, c, mr * ldc * 4);
        t->pack_a(m, k, a, lda, ta, alpha, ap);
        t->pack_b(k, n, b, dt, ldb, tb, bp);
        if (t->thread_begin)
            t->thread_begin();
        t->ukr(k, ap, bp, c, ldc, m, n, beta);
        if (t->thread_end)
            t->thread_end();
        char what[160];
        snprintf(what, sizeof what, "%s ukr m%zu n%zu k%zu ta%d tb%d dt%d "
                 "beta %g", t->name, m, n, k, ta, tb, (int)dt, beta);
        check_ref(what, m, n, k, alpha, a, lda, ta, b, dt, ldb, tb, beta,
                  c0, c, ldc);
        // Outside m x n untouched (bits).
        for (size_t i = 0; i < mr; i++)
            for (size_t j = 0; j < ldc; j++)
                if (i >= m || j >= n)
                    ck_assert_msg(bits(c[i * ldc + j]) ==
                                  bits(c0[i * ldc + j]),
                                  "%s: wrote C[%zu][%zu]", what, i, j);
        ck_assert_msg(guard_ok(c, mr * ldc) &&
                      guard_ok((float *)ap, mr * kpad / 2 + 1) &&
                      guard_ok((float *)bp, nr * kpad / 2 + 1),
                      "%s: canary", what);
        free_guarded(a);
        free_guarded(b);
        free_guarded(c);
        free(c0);
        free_guarded((float *)ap);
        free_guarded((float *)bp);
        cases++;
    }
    printf("bf16 tiles %s: %zu micro-kernel cases\n", t->name, cases);
}
END_TEST

// ---- the driver ----------------------------------------------------------

typedef struct gcase {
    size_t m, n, k;
    int ta, tb, pre;
    mhsa_dtype dt;
    float alpha, beta;
} gcase;

static void run_driver(const mhsa_kernels *k, const gcase *g, int threads,
                       const float *a, size_t lda, const void *b, size_t ldb,
                       const float *bpre, float *c, size_t ldc)
{
    mhsa_gemm_scratch s;
    size_t af = mhsa_gemm_a_floats(k), bfl = mhsa_gemm_b_floats(k, g->n);
    s.a = alloc_guarded(MAX_THREADS * af);
    s.b = alloc_guarded(bfl);
    s.b_floats = bfl;
    s.max_threads = MAX_THREADS;
    omp_set_num_threads(threads);
    mhsa_sgemm_bf16(k, &s, g->ta, g->tb, g->m, g->n, g->k, g->alpha, a, lda,
                    b, g->dt, ldb, bpre, g->beta, c, ldc);
    ck_assert_msg(guard_ok(s.a, MAX_THREADS * af) && guard_ok(s.b, bfl),
                  "scratch canary (%zu x %zu x %zu)", g->m, g->n, g->k);
    free_guarded(s.a);
    free_guarded(s.b);
}

static void check_gemm(const mhsa_kernels *k, const gcase *g, rng *r,
                       int specials)
{
    size_t lda = (g->ta ? g->m : g->k) + 3, ldb = (g->tb ? g->k : g->n) + 1;
    size_t ldc = g->n + 2;
    size_t na = (g->ta ? g->k : g->m) * lda, nb = (g->tb ? g->n : g->k) * ldb;
    float *a = alloc_guarded(na);
    void *b = alloc_guarded(nb);
    float *c0 = alloc_guarded(g->m * ldc);
    float *c[MAX_THREADS];
    fill_uniform(r, a, na, -1.0f, 1.0f);
    fill_b(r, b, g->dt, nb);
    fill_uniform(r, c0, g->m * ldc, -1.0f, 1.0f);
    if (specials) {
        // inf, NaN and fp32 subnormals (those read as 0) in A, B and C.
        const float sp[] = { INFINITY, -INFINITY, NAN, 0x1p-130f, -0x1p-149f,
                             0x1.8p-127f };
        for (int q = 0; q < 12; q++) {
            a[(size_t)rng_int(r, 0, (int)na - 1)] = sp[q % 6];
            if (g->dt == MHSA_F32)
                ((float *)b)[(size_t)rng_int(r, 0, (int)nb - 1)] =
                    sp[(q + 3) % 6];
        }
        c0[0] = 0x1p-140f;
    }
    if (g->beta == 0.0f)
        fill_nan(c0, g->m * ldc);
    float *bpre = NULL;
    if (g->pre) {
        bpre = alloc_guarded(mhsa_gemm_prepacked_floats(k, g->k, g->n));
        mhsa_gemm_prepack_b(k, g->k, g->n, b, ldb, g->tb, bpre);
    }
    char what[160];
    snprintf(what, sizeof what, "%s gemm %zux%zux%zu ta%d tb%d dt%d pre%d "
             "alpha %g beta %g", mhsa_gemm_bf16_tiles(k)->name, g->m, g->n,
             g->k, g->ta, g->tb, (int)g->dt, g->pre, g->alpha, g->beta);
    for (int th = 1; th <= MAX_THREADS; th++) {
        c[th - 1] = alloc_guarded(g->m * ldc);
        memcpy(c[th - 1], c0, g->m * ldc * 4);
        run_driver(k, g, th, a, lda, b, ldb, bpre, c[th - 1], ldc);
        ck_assert_msg(guard_ok(c[th - 1], g->m * ldc), "%s: C canary",
                      what);
    }
    check_ref(what, g->m, g->n, g->k, g->alpha, a, lda, g->ta, b, g->dt,
              ldb, g->tb, g->beta, c0, c[0], ldc);
    for (int th = 2; th <= MAX_THREADS; th++)
        for (size_t i = 0; i < g->m; i++)
            ck_assert_msg(memcmp(c[0] + i * ldc, c[th - 1] + i * ldc,
                                 g->n * 4) == 0,
                          "%s: %d threads differ from 1 in row %zu", what,
                          th, i);
    for (int th = 0; th < MAX_THREADS; th++)
        free_guarded(c[th]);
    free_guarded(a);
    free_guarded(b);
    free_guarded(c0);
    if (bpre)
        free_guarded(bpre);
}

START_TEST(gemm_matches_reference)
{
    const mhsa_bf16_tiles *t = NULL;
    const mhsa_kernels *k = table_for(set_names[_i], &t);
    if (!k)
        return;
    ck_assert_int_eq(mhsa__bf16_select(set_names[_i]), MHSA_OK);
    ck_assert_ptr_eq(mhsa_gemm_bf16_tiles(k), t);
    ck_assert(mhsa_gemm_bf16_native(k));
    const gcase cases[] = {
        { 1, 1, 1, 0, 0, 0, MHSA_F32, 1.0f, 0.0f },
        { 13, 33, 17, 0, 1, 0, MHSA_F32, 0.5f, 1.0f },
        { 65, 97, 129, 1, 0, 0, MHSA_F16, -2.0f, 0.0f },
        { 31, 70, 515, 0, 1, 1, MHSA_F32, 1.0f, 0.25f },   // 3 K blocks
        { 250, 40, 300, 1, 1, 0, MHSA_BF16, 1.0f, 1.0f },  // 2 M blocks
        { 33, 260, 31, 0, 0, 1, MHSA_F32, 1.0f, 0.0f },    // 3 N chunks
        { 64, 64, 256, 0, 1, 0, MHSA_BF16, 1.0f, 0.0f },
        { 7, 129, 257, 1, 1, 1, MHSA_F32, -1.0f, 1.0f },
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    int n_run = test_count(NC);
    if (n_run < 4)
        n_run = 4;
    rng r = { 31 };
    for (int i = 0; i < n_run; i++)
        check_gemm(k, &cases[i], &r, 0);
    // Special values on a few shapes.
    check_gemm(k, &cases[1], &r, 1);
    check_gemm(k, &cases[3], &r, 1);
    // k == 0 and alpha == 0: C = beta * C, beta == 0 without reading C.
    gcase z = { 5, 9, 0, 0, 0, 0, MHSA_F32, 1.0f, 0.0f };
    check_gemm(k, &z, &r, 0);
    z.k = 4; z.alpha = 0.0f; z.beta = 2.0f;
    check_gemm(k, &z, &r, 0);
    printf("bf16 tiles %s: driver cases against the reference, bitwise "
           "on 1, 2, 3 threads\n", t->name);
    ck_assert_int_eq(mhsa__bf16_select("auto"), MHSA_OK);
}
END_TEST

// The attention core's helpers: Q K^T (B = K^T, K stored as keys x dh,
// possibly F16/BF16 as a cache) and P V shapes, against the reference and
// bit for bit against the driver (one K block: the same ukr calls).
START_TEST(tile_helpers_match_driver)
{
    const mhsa_bf16_tiles *t = NULL;
    const mhsa_kernels *k = table_for(set_names[_i], &t);
    if (!k)
        return;
    ck_assert_int_eq(mhsa__bf16_select(set_names[_i]), MHSA_OK);
    const gcase cases[] = {
        { 72, 128, 64, 0, 1, 0, MHSA_F32, 0.125f, 0.0f },   // Q K^T
        { 72, 64, 128, 0, 0, 0, MHSA_F32, 1.0f, 1.0f },     // P V
        { 13, 37, 33, 1, 1, 0, MHSA_F16, -1.0f, 0.5f },
        { 40, 96, 200, 0, 1, 0, MHSA_BF16, 1.0f, 0.0f },
    };
    rng r = { 41 };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const gcase *g = &cases[ci];
        size_t lda = (g->ta ? g->m : g->k) + 1, ldb = (g->tb ? g->k : g->n) + 2;
        size_t ldc = g->n + 1;
        size_t na = (g->ta ? g->k : g->m) * lda, nb = (g->tb ? g->n : g->k) * ldb;
        float *a = alloc_guarded(na), *c0 = alloc_guarded(g->m * ldc);
        void *b = alloc_guarded(nb);
        float *c1 = alloc_guarded(g->m * ldc), *c2 = alloc_guarded(g->m * ldc);
        fill_uniform(&r, a, na, -1.0f, 1.0f);
        fill_b(&r, b, g->dt, nb);
        fill_uniform(&r, c0, g->m * ldc, -1.0f, 1.0f);
        memcpy(c1, c0, g->m * ldc * 4);
        memcpy(c2, c0, g->m * ldc * 4);
        size_t ae = mhsa_tile_bf16_a_elems(t, g->m, g->k);
        size_t be = mhsa_tile_bf16_b_elems(t, g->k, g->n);
        uint16_t *ap = (uint16_t *)alloc_guarded(ae / 2 + 1);
        uint16_t *bp = (uint16_t *)alloc_guarded(be / 2 + 1);
        mhsa_tile_bf16_pack_a(t, g->m, g->k, a, lda, g->ta, g->alpha, ap);
        mhsa_tile_bf16_pack_b(t, g->k, g->n, b, g->dt, ldb, g->tb, bp);
        mhsa_tile_bf16_begin(t);
        mhsa_tile_bf16_gemm(t, g->m, g->n, g->k, ap, bp, c1, ldc, g->beta);
        mhsa_tile_bf16_end(t);
        run_driver(k, g, 1, a, lda, b, ldb, NULL, c2, ldc);
        char what[128];
        snprintf(what, sizeof what, "%s tile helpers %zux%zux%zu",
                 t->name, g->m, g->n, g->k);
        check_ref(what, g->m, g->n, g->k, g->alpha, a, lda, g->ta, b, g->dt,
                  ldb, g->tb, g->beta, c0, c1, ldc);
        ck_assert_msg(memcmp(c1, c2, g->m * ldc * 4) == 0,
                      "%s: differ from the driver", what);
        ck_assert_msg(guard_ok((float *)ap, ae / 2 + 1) &&
                      guard_ok((float *)bp, be / 2 + 1) &&
                      guard_ok(c1, g->m * ldc), "%s: canary", what);
        free_guarded(a);
        free_guarded(b);
        free_guarded(c0);
        free_guarded(c1);
        free_guarded(c2);
        free_guarded((float *)ap);
        free_guarded((float *)bp);
    }
    ck_assert_int_eq(mhsa__bf16_select("auto"), MHSA_OK);
    printf("bf16 tiles %s: tile helpers equal the driver\n", t->name);
}
END_TEST

// ---- blocking, choice, errors ---------------------------------------------

START_TEST(sets_fit_the_scratch)
{
    int n = 0;
    const mhsa_kernels *em = emulated_table(MHSA_ISA_AVX512);
    const mhsa_kernels *tabs[4] = { 0 };
    int nt = 0;
    for (int i = 0; with_sets[i]; i++)
        tabs[nt++] = with_sets[i];
    if (em)
        tabs[nt++] = em;
    for (int i = 0; i < nt; i++)
        for (const mhsa_bf16_tiles *const *t = tabs[i]->bf16; t && *t; t++) {
            ck_assert_msg(mhsa_gemm_bf16_fits(tabs[i], *t),
                          "table %s%s: bf16 set %s does not fit its fp32 "
                          "scratch (blocking kc %zu mc %zu)", tabs[i]->name,
                          tabs[i] == em ? " (emulated)" : "", (*t)->name,
                          (*t)->blocking.kc, (*t)->blocking.mc);
            n++;
        }
    // A table without sets has none to run.
    ck_assert(!mhsa_gemm_bf16_native(&mhsa_kernels_scalar));
    printf("bf16 tiles: %d sets fit their tables' scratch\n", n);
}
END_TEST

START_TEST(choosing_what_is_missing)
{
    // Without the emulated stand-in, what remains is this CPU's own.
    mhsa__set_stand_in(NULL);
    const mhsa_cpu_features *f = mhsa__cpu_features();
    int has_amx = 0, has_dp = 0;
    const mhsa_kernels *k = mhsa_kernels_for(MHSA_ISA_AVX512);
    (void)f;
#if MHSA_HAVE_AMX
    has_amx = k && f->amx_bf16 && f->avx512_bf16 && mhsa__amx_permitted();
#endif
#if MHSA_HAVE_AVX512_BF16
    has_dp = k && f->avx512_bf16;
#endif
    ck_assert_int_eq(mhsa__bf16_select("amx_bf16"),
                     has_amx ? MHSA_OK : MHSA_ERR_UNSUPPORTED);
    ck_assert_int_eq(mhsa__bf16_select("avx512_bf16"),
                     has_dp ? MHSA_OK : MHSA_ERR_UNSUPPORTED);
    if (!has_amx)
        ck_assert(strstr(mhsa_last_error(), "amx_bf16") ||
                  strstr(mhsa_last_error(), "avx512_bf16"));
    ck_assert_int_eq(mhsa__bf16_select("avx2"), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__bf16_select("none"), MHSA_OK);
    ck_assert_str_eq(mhsa__bf16_selected(), "none");
    if (k)
        ck_assert(!mhsa_gemm_bf16_native(k));
    ck_assert_int_eq(mhsa__bf16_select(NULL), MHSA_OK);
    ck_assert_str_eq(mhsa__bf16_selected(), "auto");
    if (k)
        ck_assert_int_eq(mhsa_gemm_bf16_native(k), has_amx || has_dp);
    printf("bf16 tiles here: amx_bf16 %s, avx512_bf16 %s (native)\n",
           has_amx ? "yes" : "no", has_dp ? "yes" : "no");
}
END_TEST

// MHSA_BF16_TILES at the first use: a set that runs here is taken, one
// that does not is ignored (auto). Each check runs in a fresh process
// (check's fork mode), where nothing has read the choice yet.
START_TEST(env_chooses)
{
    const mhsa_bf16_tiles *t = NULL;
    const mhsa_kernels *k = table_for("avx512_bf16", &t);
    if (_i == 0) {
        if (!k)
            return;
        setenv("MHSA_BF16_TILES", "avx512_bf16", 1);
        ck_assert_str_eq(mhsa__bf16_selected(), "avx512_bf16");
        ck_assert_ptr_eq(mhsa_gemm_bf16_tiles(k), t);
    } else if (_i == 1) {
        setenv("MHSA_BF16_TILES", "none", 1);
        ck_assert_str_eq(mhsa__bf16_selected(), "none");
        if (k)
            ck_assert(!mhsa_gemm_bf16_native(k));
    } else {
        // What this CPU lacks, with no emulated table to stand in.
        mhsa__set_stand_in(NULL);
        int has = 0;
        const mhsa_kernels *n = mhsa_kernels_for(MHSA_ISA_AVX512);
        for (const mhsa_bf16_tiles *const *b = n ? n->bf16 : NULL; b && *b;
             b++)
            has |= strcmp((*b)->name, "amx_bf16") == 0 &&
                   mhsa_gemm_bf16_runnable(*b);
        setenv("MHSA_BF16_TILES", "amx_bf16", 1);
        ck_assert_str_eq(mhsa__bf16_selected(), has ? "amx_bf16" : "auto");
    }
}
END_TEST

// The table of measured CPUs, on synthetic CPU ids: Zen 4 and Zen 5 with
// AVX512-BF16 take the avx512_bf16 tiles, Emerald Rapids without AMX
// the exact fallback (with AVX512-BF16 or without), and CPUs nobody
// measured (Sapphire Rapids, a later AMD family or model, Emerald Rapids
// with AMX, other vendors) no row: auto measures them.
START_TEST(table_of_measured_cpus)
{
    mhsa_cpu_features f;
    memset(&f, 0, sizeof f);
    f.avx512 = f.avx512_bf16 = 1;
    f.vendor = MHSA_CPU_AMD;
    f.family = 25;
    f.model = 17;
    const mhsa_bf16_row *r = mhsa__bf16_table_row(&f);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->take, "avx512_bf16");
    f.avx512_bf16 = 0;   // Zen 3 is family 25 too: no AVX512-BF16, no row
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));
    f.avx512_bf16 = 1;
    f.family = 26;       // Zen 5
    f.model = 2;
    const mhsa_bf16_row *zen5 = mhsa__bf16_table_row(&f);
    ck_assert_ptr_nonnull(zen5);
    ck_assert_ptr_ne(zen5, r);
    ck_assert_str_eq(zen5->take, "avx512_bf16");
    f.model = 0x50;      // a family 26 model nobody measured
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));
    f.family = 27;       // nor a later family
    f.model = 2;
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));

    f.vendor = MHSA_CPU_INTEL;
    f.family = 6;
    f.model = 207;
    r = mhsa__bf16_table_row(&f);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->take, "none");
    f.avx512_bf16 = 0;   // this row's CPU with no bf16 instructions
    ck_assert_ptr_eq(mhsa__bf16_table_row(&f), r);
    f.avx512_bf16 = f.amx_bf16 = 1;   // AMX exposed: not measured
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));
    f.amx_bf16 = 0;
    f.model = 143;       // Sapphire Rapids: not measured
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));
    f.vendor = MHSA_CPU_OTHER;
    f.model = 207;
    ck_assert_ptr_null(mhsa__bf16_table_row(&f));

    // The margin: ties and near-ties go to the exact fallback.
    ck_assert(mhsa__bf16_tiles_win(0.5, 1.0));
    ck_assert(!mhsa__bf16_tiles_win(1.0, 1.0));
    ck_assert(!mhsa__bf16_tiles_win(0.95, 1.0));
    ck_assert(!mhsa__bf16_tiles_win(1.84, 1.0));
    ck_assert(!mhsa__bf16_tiles_win(0.0, 1.0));
}
END_TEST

// This CPU: auto's choice for its own table follows the rules of
// gemm_bf16.h, says why, and is what the driver then uses.
START_TEST(auto_follows_the_rules)
{
    mhsa__set_stand_in(NULL);
    ck_assert_int_eq(mhsa__bf16_select("auto"), MHSA_OK);
    const mhsa_kernels *k = mhsa__kernels();
    const mhsa_bf16_tiles *first = NULL;
    for (const mhsa_bf16_tiles *const *b = k->bf16; b && *b && !first; b++)
        if (mhsa_gemm_bf16_runnable(*b) && mhsa_gemm_bf16_fits(k, *b))
            first = *b;
    mhsa_bf16_choice c = mhsa__bf16_choice(k);
    char why[256];
    ck_assert_int_gt(mhsa__bf16_explain(&c, why, sizeof why), 0);
    printf("bf16 auto on this CPU (%s table): %s, %s\n", k->name,
           c.tiles ? c.tiles->name : "none", why);
    const mhsa_bf16_row *row = mhsa__bf16_table_row(mhsa__cpu_features());
    if (first && first->emulated) {
        ck_assert_int_eq(c.how, MHSA_BF16_EMULATED);
    } else if (row && strcmp(row->take, "none") == 0) {
        ck_assert_int_eq(c.how, MHSA_BF16_TABLE);
        ck_assert_ptr_null(c.tiles);
        ck_assert(strncmp(why, "table: ", 7) == 0);
    } else if (c.how == MHSA_BF16_TABLE) {
        ck_assert_ptr_eq(c.row, row);
        ck_assert_str_eq(c.tiles->name, row->take);
    } else if (!first) {
        ck_assert_int_eq(c.how, MHSA_BF16_NO_TILES);
        ck_assert_ptr_null(c.tiles);
    } else {
        ck_assert_int_eq(c.how, MHSA_BF16_MEASURED);
        ck_assert(strncmp(why, "measured: ", 10) == 0);
        ck_assert(c.tiles == NULL || c.tiles == c.timed);
    }
    ck_assert_ptr_eq(mhsa_gemm_bf16_tiles(k), c.tiles);
    // Asked again: the same (a measurement is made once).
    mhsa_bf16_choice again = mhsa__bf16_choice(k);
    ck_assert_ptr_eq(again.tiles, c.tiles);
    ck_assert_int_eq(again.how, c.how);
    ck_assert(again.ms_tiles == c.ms_tiles);
}
END_TEST

// The micro-benchmark runs and its verdict is one of the two candidates
// (timing itself is never asserted): on a native set where the CPU has
// one, else on the emulated avx512_bf16 set, at a small shape.
START_TEST(measurement_picks_a_candidate)
{
    const mhsa_bf16_tiles *t = NULL;
    const mhsa_kernels *k = NULL;
    for (int i = 0; i < N_SETS && !k; i++)
        k = table_for(set_names[i], &t);
    if (!k)
        return;
    double mt = -1.0, mf = -1.0;
    ck_assert_int_eq(mhsa__bf16_measure(k, t, 24, 64, 64, 0.5, &mt, &mf), 0);
    ck_assert(mt > 0.0 && mf > 0.0);
    int win = mhsa__bf16_tiles_win(mt, mf);
    ck_assert(win == 0 || win == 1);
    printf("bf16 measurement of %s%s: %.4f ms against the fallback's "
           "%.4f ms: %s\n", t->name, t->emulated ? " (emulated)" : "", mt,
           mf, win ? "tiles" : "fallback");
    ck_assert_int_eq(mhsa__bf16_measure(k, t, 0, 64, 64, 0.5, &mt, &mf), -1);
    // The whole path auto takes on a CPU outside the table: each set of
    // the table against the fallback, once, remembered.
    mhsa_bf16_choice c = mhsa__bf16_measured_choice(k);
    ck_assert_int_eq(c.how, MHSA_BF16_MEASURED);
    int listed = 0;
    for (const mhsa_bf16_tiles *const *b = k->bf16; *b; b++)
        listed |= *b == c.timed;
    ck_assert(listed);
    ck_assert(c.tiles == NULL || c.tiles == c.timed);
    ck_assert_int_eq(c.tiles != NULL,
                     mhsa__bf16_tiles_win(c.ms_tiles, c.ms_fallback));
    mhsa_bf16_choice again = mhsa__bf16_measured_choice(k);
    ck_assert_ptr_eq(again.tiles, c.tiles);
    ck_assert(again.ms_tiles == c.ms_tiles &&
              again.ms_fallback == c.ms_fallback);
    char why[256];
    mhsa__bf16_explain(&c, why, sizeof why);
    ck_assert(strncmp(why, "measured: ", 10) == 0);
    printf("bf16 measured choice: %s (%s)\n",
           c.tiles ? c.tiles->name : "none", why);
    // A table without sets: nothing to measure.
    ck_assert_int_eq(mhsa__bf16_measured_choice(&mhsa_kernels_scalar).how,
                     MHSA_BF16_NO_TILES);
    mhsa__set_stand_in(NULL);
}
END_TEST

// A forced choice wins over the table and the measurement, and says so.
START_TEST(forced_choice_says_so)
{
    mhsa__set_stand_in(NULL);
    const mhsa_kernels *k = mhsa__kernels();
    char why[256];
    if (_i == 0) {
        ck_assert_int_eq(mhsa__bf16_select("none"), MHSA_OK);
        mhsa_bf16_choice c = mhsa__bf16_choice(k);
        ck_assert_ptr_null(c.tiles);
        ck_assert_int_eq(c.how, MHSA_BF16_FORCED_CALL);
        mhsa__bf16_explain(&c, why, sizeof why);
        ck_assert_str_eq(why, "forced by mhsa__bf16_select(\"none\")");
        ck_assert_int_eq(mhsa__bf16_select("auto"), MHSA_OK);
        ck_assert_int_ne(mhsa__bf16_choice(k).how, MHSA_BF16_FORCED_CALL);
    } else {
        // A fresh process (fork mode): the environment is read first.
        setenv("MHSA_BF16_TILES", "none", 1);
        mhsa_bf16_choice c = mhsa__bf16_choice(k);
        ck_assert_ptr_null(c.tiles);
        ck_assert_int_eq(c.how, MHSA_BF16_FORCED_ENV);
        mhsa__bf16_explain(&c, why, sizeof why);
        ck_assert_str_eq(why, "forced by MHSA_BF16_TILES=none");
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bf16_tiles");
    ADD_CASE(s, table_of_measured_cpus, 1, NULL);
    ADD_CASE(s, auto_follows_the_rules, 1, NULL);
    ADD_CASE(s, measurement_picks_a_candidate, 1, NULL);
    // The edge lists and the driver's shapes take minutes under valgrind
    // on the emulated tiles (slow: valgrind leaves them out, ASan and the
    // native run take them); the tile helpers still run there, through
    // the packers, the micro-kernels and the driver.
    ADD_CASE(s, ukr_matches_reference, N_SETS, "slow");
    ADD_CASE(s, gemm_matches_reference, N_SETS, "slow");
    ADD_CASE(s, tile_helpers_match_driver, N_SETS, NULL);
    ADD_CASE(s, sets_fit_the_scratch, 1, NULL);
    ADD_CASE(s, choosing_what_is_missing, 1, NULL);
    // Only in check's fork mode (valgrind runs CK_FORK=no, one process).
    const char *fork = getenv("CK_FORK");
    if (!fork || strcmp(fork, "no") != 0)
        ADD_CASE(s, env_chooses, 3, NULL);
    // The second case reads MHSA_BF16_TILES: a fresh process only.
    ADD_CASE(s, forced_choice_says_so,
             !fork || strcmp(fork, "no") != 0 ? 2 : 1, NULL);
    return run_suite(s);
}
