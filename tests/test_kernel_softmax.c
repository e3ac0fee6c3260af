// test_kernel_softmax.c — the softmax kernels of every ISA: online step,
// backward and whole row against a double-precision reference of the same
// math, every ISA against scalar, the -INFINITY / NaN / causal rules of
// kernels.h, chunked online updates against one shot, and (AVX2 only) the
// accuracy of the vectorised expf in src/avx2/vmath.h.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS)

static const float pad_val = 777.25f;   // row padding that must survive

// One generated online-softmax problem, with padded rows (lds = n + 3,
// ldo = dv + 2) so writes past n or dv are caught.
typedef struct prob {
    size_t rows, n, dv, lds, ldo, ldmask;
    float *s, *mask, *m, *l, *o;
    mhsa_mask_view mv;
} prob;

static void prob_alloc(prob *p, size_t rows, size_t n, size_t dv)
{
    memset(p, 0, sizeof *p);
    p->rows = rows, p->n = n, p->dv = dv;
    p->lds = n + 3, p->ldo = dv + 2, p->ldmask = n + 1;
    p->s = alloc_guarded(rows * p->lds);
    p->mask = alloc_guarded(rows * p->ldmask);
    p->m = alloc_guarded(rows);
    p->l = alloc_guarded(rows);
    p->o = alloc_guarded(rows * p->ldo);
    for (size_t i = 0; i < rows * p->lds; i++)
        p->s[i] = pad_val;
    for (size_t i = 0; i < rows * p->ldo; i++)
        p->o[i] = pad_val;
    for (size_t i = 0; i < rows * p->ldmask; i++)
        p->mask[i] = 0.0f;
}

static void prob_free(prob *p)
{
    free_guarded(p->s);
    free_guarded(p->mask);
    free_guarded(p->m);
    free_guarded(p->l);
    free_guarded(p->o);
}

static void prob_copy(prob *d, const prob *s)
{
    prob_alloc(d, s->rows, s->n, s->dv);
    memcpy(d->s, s->s, s->rows * s->lds * sizeof(float));
    memcpy(d->mask, s->mask, s->rows * s->ldmask * sizeof(float));
    memcpy(d->m, s->m, s->rows * sizeof(float));
    memcpy(d->l, s->l, s->rows * sizeof(float));
    memcpy(d->o, s->o, s->rows * s->ldo * sizeof(float));
    d->mv = s->mv;
    d->mv.mask = s->mv.mask ? d->mask : NULL;
}

static mhsa_softmax_args prob_args(prob *p)
{
    mhsa_softmax_args a = {
        .rows = p->rows, .n = p->n, .s = p->s, .lds = p->lds, .mv = p->mv,
        .m = p->m, .l = p->l, .o = p->o, .ldo = p->ldo, .dv = p->dv,
    };
    return a;
}

static int blocked(const mhsa_mask_view *mv, size_t r, size_t j)
{
    if (mv->causal && mv->k0 + j > mv->q0 + r)
        return 1;
    return mv->mask && mv->mask[r * mv->ldmask + j] == -INFINITY;
}

// Random problem; variant picks mask/causal flavours. Blocked scores get
// NaN so any leak shows.
static void prob_fill(prob *p, rng *g, int variant, int fresh)
{
    for (size_t r = 0; r < p->rows; r++) {
        fill_uniform(g, p->s + r * p->lds, p->n, -6.0f, 6.0f);
        fill_uniform(g, p->o + r * p->ldo, p->dv, -2.0f, 2.0f);
        p->m[r] = fresh ? -INFINITY : rng_uniform(g, -3.0f, 3.0f);
        p->l[r] = fresh ? 0.0f : rng_uniform(g, 0.5f, 4.0f);
    }
    p->mv.mask = NULL;
    p->mv.ldmask = p->ldmask;
    p->mv.causal = variant & 1;
    p->mv.q0 = (size_t)rng_int(g, 0, 12);
    p->mv.k0 = (size_t)rng_int(g, 0, 12);
    if (variant & 2) {
        p->mv.mask = p->mask;
        for (size_t r = 0; r < p->rows; r++)
            for (size_t j = 0; j < p->n; j++) {
                int u = rng_int(g, 0, 9);
                p->mask[r * p->ldmask + j] = u < 2 ? -INFINITY
                                           : u < 3 ? -FLT_MAX
                                           : rng_uniform(g, -3.0f, 1.0f);
            }
    }
    for (size_t r = 0; r < p->rows; r++)
        for (size_t j = 0; j < p->n; j++)
            if (blocked(&p->mv, r, j))
                p->s[r * p->lds + j] = NAN;
}

static int pads_ok(const prob *p)
{
    for (size_t r = 0; r < p->rows; r++) {
        for (size_t j = p->n; j < p->lds; j++)
            if (p->s[r * p->lds + j] != pad_val)
                return 0;
        for (size_t d = p->dv; d < p->ldo; d++)
            if (p->o[r * p->ldo + d] != pad_val)
                return 0;
    }
    return guard_ok(p->s, p->rows * p->lds) && guard_ok(p->m, p->rows)
        && guard_ok(p->l, p->rows) && guard_ok(p->o, p->rows * p->ldo)
        && guard_ok(p->mask, p->rows * p->ldmask);
}

// Score plus mask rounded to float, as the kernels store it in s (with
// -FLT_MAX masks the rounding decides which keys tie).
static double masked_sum(const prob *in, const float *s, size_t r, size_t j)
{
    float add = in->mv.mask ? in->mv.mask[r * in->ldmask + j] : 0.0f;
    return (double)(s[j] + add);
}

// The online step in double, from the float inputs in `in` (not yet run).
// Writes p (rows x n), m, l, o (rows x dv) in double.
static void ref_online(const prob *in, double *p, double *m, double *l,
                       double *o)
{
    for (size_t r = 0; r < in->rows; r++) {
        const float *s = in->s + r * in->lds;
        double mo = in->m[r], mn = mo;
        for (size_t j = 0; j < in->n; j++) {
            if (blocked(&in->mv, r, j))
                continue;
            double x = masked_sum(in, s, r, j);
            if (x > mn)
                mn = x;
        }
        double sum = 0;
        for (size_t j = 0; j < in->n; j++) {
            double x = masked_sum(in, s, r, j);
            double pj = blocked(&in->mv, r, j) || mn == -INFINITY
                      ? 0.0 : exp(x - mn);
            p[r * in->n + j] = pj;
            sum += pj;
        }
        double alpha = mn == -INFINITY ? 1.0 : exp(mo - mn);
        m[r] = mn;
        l[r] = in->l[r] * alpha + sum;
        for (size_t d = 0; d < in->dv; d++)
            o[r * in->dv + d] = in->o[r * in->ldo + d] * alpha;
    }
}

static void report(const char *what, const mhsa_kernels *k, size_t rows,
                   size_t n, int variant, unsigned seed, double err)
{
    printf("FAIL %s: isa %s rows %zu n %zu variant %d seed %u err %g\n",
           what, k->name, rows, n, variant, seed, err);
}

// Online step vs the double reference, and vs the scalar kernel, for
// n = 1..3*8+1 and rows 1..7, fresh and continuing rows, all mask flavours.
START_TEST(online_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    unsigned seed = 0;
    for (size_t n = 1; n <= 25; n++)
        for (size_t rows = 1; rows <= 7; rows++)
            for (int variant = 0; variant < 8; variant++) {
                rng g = { ++seed };
                prob a, b;
                prob_alloc(&a, rows, n, 1 + n % 11);
                prob_fill(&a, &g, variant & 3, variant < 4);
                prob_copy(&b, &a);
                double p[7 * 25], m[7], l[7], o[7 * 12];
                ref_online(&a, p, m, l, o);
                mhsa_softmax_args aa = prob_args(&a), ab = prob_args(&b);
                k->softmax_online(&aa);
                mhsa_kernels_scalar.softmax_online(&ab);
                ck_assert_msg(pads_ok(&a), "isa %s wrote outside rows=%zu "
                              "n=%zu variant %d seed %u", k->name, rows, n,
                              variant, seed);
                for (size_t r = 0; r < rows; r++) {
                    double e = rel_err_d(a.s + r * a.lds, p + r * n, n);
                    double el = fabs(a.l[r] - l[r]) / fmax(1.0, fabs(l[r]));
                    double eo = rel_err_d(a.o + r * a.ldo, o + r * a.dv, a.dv);
                    int mok = (float)m[r] == a.m[r];
                    if (e > 2e-6 || el > 4e-6 || eo > 2e-6 || !mok)
                        report("online vs double", k, rows, n, variant, seed,
                               fmax(e, fmax(el, eo)));
                    ck_assert(e <= 2e-6 && el <= 4e-6 && eo <= 2e-6 && mok);
                    for (size_t j = 0; j < n; j++)
                        if (blocked(&a.mv, r, j))
                            ck_assert_msg(a.s[r * a.lds + j] == 0.0f
                                          && !signbit(a.s[r * a.lds + j]),
                                          "blocked weight not +0");
                    double es = rel_err(a.s + r * a.lds, b.s + r * b.lds, n);
                    double eos = rel_err(a.o + r * a.ldo, b.o + r * b.ldo,
                                         a.dv);
                    double els = fabs(a.l[r] - b.l[r]) / fmax(1.0, b.l[r]);
                    if (es > 2e-6 || eos > 2e-6 || els > 4e-6
                        || a.m[r] != b.m[r])
                        report("online vs scalar", k, rows, n, variant, seed,
                               fmax(es, fmax(eos, els)));
                    ck_assert(es <= 2e-6 && eos <= 2e-6 && els <= 4e-6);
                    ck_assert(a.m[r] == b.m[r]);
                }
                prob_free(&a);
                prob_free(&b);
            }
}
END_TEST

// Keys split into several tiles, o accumulated with a tiny P·V after each
// step, give the same o / l as one step over all keys.
START_TEST(online_chunked_equals_one_shot)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { R = 5, N = 37, DV = 6 };
    static const size_t cuts[][4] = {
        { 1, 8, 17, 37 }, { 9, 16, 25, 37 }, { 3, 4, 5, 37 },
        { 36, 37, 37, 37 },
    };
    for (int variant = 0; variant < 4; variant++)
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            unsigned seed = 100 + (unsigned)(variant * 10 + (int)c);
            rng g = { seed };
            float s[R * N], mask[R * N], v[N * DV];
            fill_uniform(&g, s, R * N, -8.0f, 8.0f);
            fill_uniform(&g, v, N * DV, -1.0f, 1.0f);
            for (size_t i = 0; i < R * N; i++)
                mask[i] = rng_int(&g, 0, 4) == 0 ? -INFINITY
                        : rng_uniform(&g, -2.0f, 0.0f);
            mhsa_mask_view mv = { variant & 2 ? mask : NULL, N, 20, 0,
                                  variant & 1 };
            // one shot
            float s1[R * N], m1[R], l1[R], o1[R * DV] = { 0 };
            memcpy(s1, s, sizeof s);
            for (int r = 0; r < R; r++)
                m1[r] = -INFINITY, l1[r] = 0.0f;
            mhsa_softmax_args a1 = { R, N, s1, N, mv, m1, l1, o1, DV, DV };
            k->softmax_online(&a1);
            for (int r = 0; r < R; r++)
                for (int d = 0; d < DV; d++)
                    for (int j = 0; j < N; j++)
                        o1[r * DV + d] += s1[r * N + j] * v[j * DV + d];
            // in tiles
            float s2[R * N], m2[R], l2[R], o2[R * DV] = { 0 };
            memcpy(s2, s, sizeof s);
            for (int r = 0; r < R; r++)
                m2[r] = -INFINITY, l2[r] = 0.0f;
            size_t j0 = 0;
            for (int t = 0; t < 4 && j0 < N; t++) {
                size_t j1 = cuts[c][t];
                mhsa_mask_view tv = mv;
                tv.k0 = mv.k0 + j0;
                tv.mask = mv.mask ? mv.mask + j0 : NULL;
                mhsa_softmax_args a2 = { R, j1 - j0, s2 + j0, N, tv, m2, l2,
                                         o2, DV, DV };
                k->softmax_online(&a2);
                for (int r = 0; r < R; r++)
                    for (int d = 0; d < DV; d++)
                        for (size_t j = j0; j < j1; j++)
                            o2[r * DV + d] += s2[r * N + j] * v[j * DV + d];
                j0 = j1;
            }
            for (int r = 0; r < R; r++) {
                ck_assert_msg(m1[r] == m2[r], "isa %s m differs, seed %u",
                              k->name, seed);
                ck_assert_msg(fabsf(l1[r] - l2[r]) <= 1e-5f * l1[r],
                              "isa %s l %g vs %g seed %u", k->name, l1[r],
                              l2[r], seed);
                for (int d = 0; d < DV; d++) {
                    float y1 = o1[r * DV + d] / l1[r];
                    float y2 = o2[r * DV + d] / l2[r];
                    ck_assert_msg(fabsf(y1 - y2) <= 1e-5f, "isa %s o/l %g vs "
                                  "%g seed %u", k->name, y1, y2, seed);
                }
            }
        }
}
END_TEST

// Rows with every key blocked (mask or causal) give p = 0, keep m = -inf,
// l = 0 and o untouched, even with NaN scores; no NaN anywhere.
START_TEST(online_all_blocked_rows)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 25; n++)
        for (int how = 0; how < 2; how++) {
            enum { R = 3, DV = 5 };
            float s[R * 25], mask[R * 25], m[R], l[R], o[R * DV];
            fill_nan(s, R * n);
            for (size_t i = 0; i < R * n; i++)
                mask[i] = -INFINITY;
            for (int i = 0; i < R * DV; i++)
                o[i] = (float)i;
            for (int r = 0; r < R; r++)
                m[r] = -INFINITY, l[r] = 0.0f;
            // how 0: -inf mask; how 1: causal, keys start after the rows
            mhsa_mask_view mv = { how == 0 ? mask : NULL, n, 0, R,
                                  how == 1 };
            mhsa_softmax_args a = { R, n, s, n, mv, m, l, o, DV, DV };
            k->softmax_online(&a);
            for (size_t i = 0; i < R * n; i++)
                ck_assert_msg(s[i] == 0.0f, "isa %s n %zu how %d: p[%zu]=%g",
                              k->name, n, how, i, s[i]);
            for (int r = 0; r < R; r++) {
                ck_assert(m[r] == -INFINITY);
                ck_assert(l[r] == 0.0f);
            }
            for (int i = 0; i < R * DV; i++)
                ck_assert(o[i] == (float)i);
        }
}
END_TEST

// One finite key among blocked ones: weight exactly 1, l = 1.
START_TEST(online_single_key)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 25; n++)
        for (size_t pos = 0; pos < n; pos++) {
            float s[25], mask[25], m = -INFINITY, l = 0.0f, o[3] = { 1, 2, 3 };
            for (size_t j = 0; j < n; j++) {
                s[j] = j == pos ? 3.5f : NAN;
                mask[j] = j == pos ? -1.0f : -INFINITY;
            }
            mhsa_mask_view mv = { mask, n, 0, 0, 0 };
            mhsa_softmax_args a = { 1, n, s, n, mv, &m, &l, o, 3, 3 };
            k->softmax_online(&a);
            ck_assert_msg(l == 1.0f && m == 2.5f, "isa %s n %zu pos %zu: "
                          "l %g m %g", k->name, n, pos, l, m);
            for (size_t j = 0; j < n; j++)
                ck_assert(s[j] == (j == pos ? 1.0f : 0.0f));
            ck_assert(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f);
        }
}
END_TEST

// Scores of magnitude 1e4 (and -FLT_MAX mask values) stay finite; a row
// whose only unblocked keys have -FLT_MAX added still normalises to 1.
START_TEST(online_extreme_scores)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { R = 4, N = 19 };
    rng g = { 7 };
    float s[R * N], mask[R * N], m[R], l[R], o[R] = { 1, 1, 1, 1 };
    for (int i = 0; i < R * N; i++)
        s[i] = rng_int(&g, 0, 1) ? 1e4f : -1e4f;
    for (int i = 0; i < R * N; i++)
        mask[i] = (i / N) == 3 ? -FLT_MAX : (i % 5 == 0 ? -INFINITY : 0.0f);
    for (int r = 0; r < R; r++)
        m[r] = -INFINITY, l[r] = 0.0f;
    mhsa_mask_view mv = { mask, N, 0, 0, 0 };
    mhsa_softmax_args a = { R, N, s, N, mv, m, l, o, 1, 1 };
    k->softmax_online(&a);
    ck_assert(all_finite(s, R * N) && all_finite(l, R) && all_finite(m, R));
    for (int r = 0; r < R; r++) {
        double sum = 0;
        for (int j = 0; j < N; j++) {
            ck_assert(s[r * N + j] >= 0.0f && s[r * N + j] <= 1.0f);
            sum += s[r * N + j];
        }
        ck_assert_msg(fabs(sum - l[r]) <= 1e-6 * l[r] && l[r] >= 1.0f,
                      "isa %s row %d: sum %g l %g", k->name, r, sum, l[r]);
    }
}
END_TEST

// NaN in an unblocked score makes that row's l NaN; other rows are clean.
START_TEST(online_nan_unblocked_propagates)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    // (A row whose only unblocked key is NaN: online_all_nan_row_is_nan.)
    for (size_t n = 2; n <= 25; n++) {
        enum { R = 3 };
        float s[R * 25], m[R], l[R], o[R];
        rng g = { n };
        fill_uniform(&g, s, R * n, -1.0f, 1.0f);
        s[1 * n + (n - 1)] = NAN;   // row 1, last (tail) key
        for (int r = 0; r < R; r++)
            m[r] = -INFINITY, l[r] = 0.0f, o[r] = 1.0f;
        mhsa_softmax_args a = { R, n, s, n, { NULL, 0, 0, 0, 0 }, m, l, o,
                                1, 1 };
        k->softmax_online(&a);
        ck_assert_msg(isnan(l[1]), "isa %s n %zu: NaN lost", k->name, n);
        ck_assert(isnan(s[1 * n + (n - 1)]));
        ck_assert(isfinite(l[0]) && isfinite(l[2]));
        ck_assert(all_finite(s, n) && all_finite(s + 2 * n, n));
    }
}
END_TEST

// A row whose every unblocked key is NaN (nothing finite to take the max
// of) is still NaN, not "fully blocked" zeros; blocked keys stay 0.
START_TEST(online_all_nan_row_is_nan)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 19; n++) {
        float s[19], mask[19], m = -INFINITY, l = 0.0f, o[2] = { 0, 0 };
        for (size_t j = 0; j < n; j++) {
            s[j] = NAN;
            mask[j] = j % 3 == 1 ? -INFINITY : 0.0f;
        }
        mhsa_softmax_args a = { 1, n, s, n, { mask, n, 0, 0, 0 }, &m, &l, o,
                                2, 2 };
        k->softmax_online(&a);
        ck_assert_msg(isnan(l), "isa %s n %zu: all-NaN row not NaN", k->name,
                      n);
        for (size_t j = 0; j < n; j++)
            ck_assert(j % 3 == 1 ? s[j] == 0.0f : isnan(s[j]));
        float x[19], y[19];
        for (size_t j = 0; j < n; j++)
            x[j] = j % 2 ? -INFINITY : NAN;
        k->softmax_row(n, x, y);
        for (size_t j = 0; j < n; j++)
            ck_assert_msg(isnan(y[j]), "isa %s n %zu: softmax_row", k->name,
                          n);
    }
}
END_TEST

// Backward: p from lse and ds = p (dp - delta), vs double and vs scalar.
START_TEST(grad_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    unsigned seed = 1000;
    for (size_t n = 1; n <= 25; n++)
        for (size_t rows = 1; rows <= 7; rows += 2)
            for (int variant = 0; variant < 4; variant++) {
                rng g = { ++seed };
                prob a;
                prob_alloc(&a, rows, n, 1);
                prob_fill(&a, &g, variant, 1);
                size_t ld = a.lds;
                float *dp = alloc_guarded(rows * ld), *s0 = malloc(
                    rows * ld * sizeof(float));
                float lse[7], delta[7];
                for (size_t i = 0; i < rows * ld; i++)
                    dp[i] = pad_val;
                for (size_t r = 0; r < rows; r++) {
                    fill_uniform(&g, dp + r * ld, n, -2.0f, 2.0f);
                    lse[r] = r == 1 ? -INFINITY : rng_uniform(&g, 4.0f, 8.0f);
                    delta[r] = rng_uniform(&g, -1.0f, 1.0f);
                }
                // dp under blocked keys may be NaN (a NaN value row): ds
                // there is still an exact +0.
                for (size_t r = 0; r < rows; r++)
                    for (size_t j = 0; j < n; j++)
                        if (blocked(&a.mv, r, j))
                            dp[r * ld + j] = NAN;
                memcpy(s0, a.s, rows * ld * sizeof(float));
                float *dp0 = malloc(rows * ld * sizeof(float));
                memcpy(dp0, dp, rows * ld * sizeof(float));
                mhsa_softmax_grad_args ga = { rows, n, a.s, ld, dp, ld, a.mv,
                                              lse, delta };
                k->softmax_grad(&ga);
                ck_assert(pads_ok(&a) && guard_ok(dp, rows * ld));
                for (size_t r = 0; r < rows; r++) {
                    double pr[25], dr[25];
                    for (size_t j = 0; j < n; j++) {
                        double x = masked_sum(&a, s0 + r * ld, r, j);
                        pr[j] = blocked(&a.mv, r, j) || lse[r] == -INFINITY
                              ? 0.0 : exp(x - lse[r]);
                        dr[j] = pr[j] == 0.0 ? 0.0
                              : pr[j] * ((double)dp0[r * ld + j] - delta[r]);
                        ck_assert(dp[r * ld + n] == pad_val);
                    }
                    double e1 = rel_err_d(a.s + r * ld, pr, n);
                    double e2 = rel_err_d(dp + r * ld, dr, n);
                    if (e1 > 4e-6 || e2 > 8e-6)
                        report("grad vs double", k, rows, n, variant, seed,
                               fmax(e1, e2));
                    ck_assert(e1 <= 4e-6 && e2 <= 8e-6);
                    for (size_t j = 0; j < n; j++)
                        if (pr[j] == 0.0)
                            ck_assert_msg(a.s[r * ld + j] == 0.0f
                                          && dp[r * ld + j] == 0.0f
                                          && !signbit(dp[r * ld + j]),
                                          "isa %s: ds not +0 where p = 0, "
                                          "seed %u", k->name, seed);
                }
                // vs scalar on the same inputs
                float *s3 = malloc(rows * ld * sizeof(float));
                memcpy(s3, s0, rows * ld * sizeof(float));
                mhsa_softmax_grad_args gs = { rows, n, s3, ld, dp0, ld, a.mv,
                                              lse, delta };
                mhsa_kernels_scalar.softmax_grad(&gs);
                double e3 = rel_err(a.s, s3, rows * ld);
                double e4 = rel_err(dp, dp0, rows * ld);
                if (e3 > 4e-6 || e4 > 8e-6)
                    report("grad vs scalar", k, rows, n, variant, seed,
                           fmax(e3, e4));
                ck_assert(e3 <= 4e-6 && e4 <= 8e-6);
                free(s3);
                free(dp0);
                free(s0);
                free_guarded(dp);
                prob_free(&a);
            }
}
END_TEST

// Whole-row softmax vs double and vs scalar, -INFINITY entries, in place.
START_TEST(row_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 100; n += n < 30 ? 1 : 7)
        for (int variant = 0; variant < 4; variant++) {
            unsigned seed = (unsigned)(n * 4 + (size_t)variant);
            rng g = { seed };
            float *x = alloc_guarded(n), *y = alloc_guarded(n);
            float *ys = alloc_guarded(n);
            fill_uniform(&g, x, n, variant == 3 ? -1e4f : -10.0f,
                         variant == 3 ? 1e4f : 10.0f);
            if (variant >= 1)
                for (size_t j = 0; j < n; j++)
                    if (rng_int(&g, 0, 3) == 0)
                        x[j] = -INFINITY;
            if (variant == 2)
                for (size_t j = 0; j < n; j++)
                    x[j] = -INFINITY;
            double ref[100], mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < n; j++)
                if (x[j] > mx)
                    mx = x[j];
            for (size_t j = 0; j < n; j++)
                sum += ref[j] = mx == -INFINITY ? 0.0 : exp(x[j] - mx);
            for (size_t j = 0; j < n; j++)
                ref[j] = sum > 0 ? ref[j] / sum : 0.0;
            k->softmax_row(n, x, y);
            mhsa_kernels_scalar.softmax_row(n, x, ys);
            ck_assert(guard_ok(x, n) && guard_ok(y, n));
            double e = rel_err_d(y, ref, n), es = rel_err(y, ys, n);
            if (e > 2e-6 || es > 2e-6)
                report("row", k, 1, n, variant, seed, fmax(e, es));
            ck_assert(e <= 2e-6 && es <= 2e-6);
            for (size_t j = 0; j < n; j++)
                if (x[j] == -INFINITY)
                    ck_assert(y[j] == 0.0f);
            // in place gives the same bits
            k->softmax_row(n, x, x);
            ck_assert(memcmp(x, y, n * sizeof(float)) == 0);
            ck_assert(guard_ok(x, n));
            free_guarded(x);
            free_guarded(y);
            free_guarded(ys);
        }
}
END_TEST

// ---- the AVX2 expf, measured directly (only where the CPU has AVX2) ----
#if MHSA_HAVE_AVX2 && defined(__x86_64__)
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#include "avx2/vmath.h"

static void exp8(const float *x, float *y)
{
    _mm256_storeu_ps(y, mhsa_exp_ps__avx2(_mm256_loadu_ps(x)));
}
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

START_TEST(avx2_exp_accuracy)
{
    if (!mhsa_kernels_for(MHSA_ISA_AVX2)) {
        printf("skip: no AVX2 on this CPU\n");
        return;
    }
    // Dense sweep: 2^22 points over [-87, 88] plus every float in
    // [-0.36, 0.36] step 2^-20 (the polynomial's own range).
    double worst = 0, at = 0;
    const size_t npts = (size_t)1 << 22;
    float x[8], y[8];
    for (size_t i = 0; i < npts; i += 8) {
        for (int l = 0; l < 8; l++)
            x[l] = -87.0f + 175.0f * (float)((double)(i + (size_t)l) / npts);
        exp8(x, y);
        for (int l = 0; l < 8; l++) {
            double ref = exp((double)x[l]);
            double e = fabs(y[l] - ref) / ref;
            if (!(e <= worst)) {
                worst = e;
                at = x[l];
            }
        }
    }
    printf("avx2 exp: max rel err %.3g at x = %.9g over [-87, 88]\n", worst,
           at);
    ck_assert_msg(worst < 3e-7, "exp rel err %g at %g", worst, at);

    // Special values.
    float sx[8] = { -INFINITY, -1e4f, -88.0f, -87.5f, NAN, INFINITY, 89.0f,
                    0.0f };
    exp8(sx, y);
    ck_assert(y[0] == 0.0f && !signbit(y[0]));
    ck_assert(y[1] == 0.0f && y[2] == 0.0f && y[3] == 0.0f);
    ck_assert(isnan(y[4]));
    ck_assert(y[5] == INFINITY && y[6] == INFINITY);
    ck_assert(y[7] == 1.0f);
    float hx[8] = { 88.0f, 88.5f, 88.7f, 88.72283f, -87.3f, -80.0f, 1e-8f,
                    -1e-8f };
    exp8(hx, y);
    for (int l = 0; l < 8; l++) {
        double ref = exp((double)hx[l]);
        ck_assert_msg(isfinite(y[l]) && fabs(y[l] - ref) / ref < 3e-7,
                      "exp(%g) = %g, want %g", hx[l], y[l], ref);
    }
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("kernel_softmax");
    TCase *tc = tcase_create("softmax");
    LOOP(tc, online_matches_reference);
    LOOP(tc, online_chunked_equals_one_shot);
    LOOP(tc, online_all_blocked_rows);
    LOOP(tc, online_single_key);
    LOOP(tc, online_extreme_scores);
    LOOP(tc, online_nan_unblocked_propagates);
    LOOP(tc, online_all_nan_row_is_nan);
    LOOP(tc, grad_matches_reference);
    LOOP(tc, row_matches_reference);
#if MHSA_HAVE_AVX2 && defined(__x86_64__)
    tcase_add_test(tc, avx2_exp_accuracy);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
