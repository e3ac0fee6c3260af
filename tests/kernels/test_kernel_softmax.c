// test_kernel_softmax.c — the softmax kernels of every ISA: online step,
// backward and whole row against a double-precision reference of the same
// math, every ISA against scalar, the rules of kernels.h (which keys a row
// sees: causal, sliding window, key padding, -INFINITY mask entries, in
// every combination, ranges wider than the tile and empty ones; NaN and
// +INFINITY in scores and masks; rows whose scores overflow to +INFINITY in
// the online step across tiles, in the backward through inf_w, and in the
// whole-row softmax), chunked online updates against one shot, and (AVX2
// only) the accuracy of the vectorised expf in src/avx2/vmath.h.
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

// Key j blocked for row r by its position: kernels.h's rules written out
// (independently of mhsa_mask_view_range).
static int pos_blocked(const mhsa_mask_view *mv, size_t r, size_t j)
{
    size_t q = mv->q0 + r, k = mv->k0 + j;
    return (mv->causal && k > q) || (mv->window && k + mv->window <= q)
        || (mv->klen && k >= mv->klen);
}

static int blocked(const mhsa_mask_view *mv, size_t r, size_t j)
{
    if (pos_blocked(mv, r, j))
        return 1;
    return mv->mask && mv->mask[r * mv->ldmask + j] == -INFINITY;
}

// Random problem; variant picks the flavours: 1 causal, 2 mask, 4 sliding
// window, 8 key padding. Blocked scores get NaN so any leak shows, and so
// do mask entries of keys blocked by position (never read either).
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
    // Windows from 1 key to wider than the tile; padding anywhere from
    // before the tile (every key blocked) to past its end.
    p->mv.window = variant & 4 ? (size_t)rng_int(g, 1, (int)p->n + 8) : 0;
    p->mv.klen = variant & 8 ? p->mv.k0 + (size_t)rng_int(g, 0, (int)p->n + 2)
                             : 0;
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
        for (size_t j = 0; j < p->n; j++) {
            if (blocked(&p->mv, r, j))
                p->s[r * p->lds + j] = NAN;
            if (p->mv.mask && pos_blocked(&p->mv, r, j))
                p->mask[r * p->ldmask + j] = NAN;
        }
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
// n = 1..3*8+1 and rows 1..7, fresh and continuing rows, every combination
// of causal, mask, window and key padding.
// c ran as a with s_room = lds (kernels.h): the same bits of s[0, n), m,
// l and o, and each padding float of c's rows is untouched or +0.
static int room_same(const prob *a, const prob *c)
{
    for (size_t r = 0; r < a->rows; r++) {
        const float *sa = a->s + r * a->lds, *sc = c->s + r * c->lds;
        if (memcmp(sa, sc, a->n * sizeof(float)))
            return 0;
        for (size_t j = a->n; j < c->lds; j++)
            if (sc[j] != pad_val && !(sc[j] == 0.0f && !signbit(sc[j])))
                return 0;
    }
    return !memcmp(a->m, c->m, a->rows * sizeof(float))
        && !memcmp(a->l, c->l, a->rows * sizeof(float))
        && !memcmp(a->o, c->o, a->rows * a->ldo * sizeof(float))
        && guard_ok(c->s, c->rows * c->lds);
}

START_TEST(online_matches_reference)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    unsigned seed = 0;
    for (size_t n = 1; n <= 25; n++)
        for (size_t rows = 1; rows <= 7; rows++)
            for (int variant = 0; variant < 16; variant++) {
                rng g = { ++seed };
                prob a, b;
                prob_alloc(&a, rows, n, 1 + n % 11);
                prob_fill(&a, &g, variant, (n + rows + (size_t)variant) & 1);
                prob_copy(&b, &a);
                prob c;   // the same call with room to write past n
                prob_copy(&c, &a);
                double p[7 * 25], m[7], l[7], o[7 * 12];
                ref_online(&a, p, m, l, o);
                mhsa_softmax_args aa = prob_args(&a), ab = prob_args(&b);
                mhsa_softmax_args ac = prob_args(&c);
                ac.s_room = c.lds;
                k->softmax_online(&aa);
                mhsa_kernels_scalar.softmax_online(&ab);
                k->softmax_online(&ac);
                ck_assert_msg(room_same(&a, &c), "isa %s: s_room changed "
                              "bits or wrote other than +0 past n, rows=%zu "
                              "n=%zu variant %d seed %u", k->name, rows, n,
                              variant, seed);
                prob_free(&c);
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
                    size_t nz = 0;   // counted: an assertion costs a message
                    for (size_t j = 0; j < n; j++)
                        nz += blocked(&a.mv, r, j)
                           && !(a.s[r * a.lds + j] == 0.0f
                                && !signbit(a.s[r * a.lds + j]));
                    ck_assert_msg(nz == 0, "isa %s: blocked weight not +0, "
                                  "seed %u", k->name, seed);
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
// step, give the same o / l as one step over all keys; also with windows
// that span tiles (5 keys, 12 keys) and key padding inside the last tile.
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
    static const size_t windows[] = { 0, 5, 12 }, klens[] = { 0, 0, 30 };
    for (int variant = 0; variant < 12; variant++)
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
                                  variant & 1, windows[variant >> 2],
                                  klens[variant >> 2] };
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
            for (int variant = 0; variant < 16; variant++) {
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
                    }
                    ck_assert(dp[r * ld + n] == pad_val);
                    double e1 = rel_err_d(a.s + r * ld, pr, n);
                    double e2 = rel_err_d(dp + r * ld, dr, n);
                    if (e1 > 4e-6 || e2 > 8e-6)
                        report("grad vs double", k, rows, n, variant, seed,
                               fmax(e1, e2));
                    ck_assert(e1 <= 4e-6 && e2 <= 8e-6);
                    size_t nz = 0;
                    for (size_t j = 0; j < n; j++)
                        nz += pr[j] == 0.0
                           && !(a.s[r * ld + j] == 0.0f
                                && dp[r * ld + j] == 0.0f
                                && !signbit(dp[r * ld + j]));
                    ck_assert_msg(nz == 0, "isa %s: ds not +0 where p = 0, "
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

// Rows whose visible range is empty by position (window behind the tile,
// padding before it, causal with keys after the row, and the three mixed)
// give p = 0, keep m, l and o, whatever the scores and mask hold there.
START_TEST(online_empty_ranges)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { R = 3, DV = 5 };
    // q0, k0, causal, window, klen: every row sees nothing of keys k0..
    static const size_t how[][5] = {
        { 40, 0, 0, 8, 0 },     // window ends before the tile
        { 40, 0, 1, 15, 0 },    // ... with causal
        { 5, 10, 0, 0, 10 },    // padding ends where the tile starts
        { 5, 10, 0, 0, 3 },     // padding ends before it
        { 0, 4, 1, 0, 0 },      // causal: keys after every row
        { 0, 4, 1, 2, 100 },    // all three, causal decides
        { 60, 30, 0, 20, 31 },  // window and padding, both decide
    };
    for (size_t n = 1; n <= 25; n++)
        for (size_t h = 0; h < sizeof how / sizeof how[0]; h++)
            for (int cont = 0; cont < 2; cont++) {
                float s[R * 25], mask[R * 25], m[R], l[R], o[R * DV];
                fill_nan(s, R * n);
                fill_nan(mask, R * n);   // never read either
                for (int i = 0; i < R * DV; i++)
                    o[i] = (float)i;
                for (int r = 0; r < R; r++)
                    m[r] = cont ? 1.5f : -INFINITY, l[r] = cont ? 2.0f : 0.0f;
                mhsa_mask_view mv = { cont ? mask : NULL, n, how[h][0],
                                      how[h][1], (int)how[h][2], how[h][3],
                                      how[h][4] };
                for (int r = 0; r < R; r++) {
                    size_t lo, hi;
                    mhsa_mask_view_range(&mv, (size_t)r, n, &lo, &hi);
                    ck_assert(lo == hi);
                }
                mhsa_softmax_args a = { R, n, s, n, mv, m, l, o, DV, DV };
                k->softmax_online(&a);
                size_t bad = 0;
                for (size_t i = 0; i < R * n; i++)
                    bad += !(s[i] == 0.0f && !signbit(s[i]));
                for (int r = 0; r < R; r++) {
                    bad += m[r] != (cont ? 1.5f : -INFINITY);
                    bad += l[r] != (cont ? 2.0f : 0.0f);
                }
                for (int i = 0; i < R * DV; i++)
                    bad += o[i] != (float)i;
                ck_assert_msg(bad == 0, "isa %s n %zu case %zu cont %d: %zu "
                              "wrong", k->name, n, h, cont, bad);
                // and the backward: p = ds = +0
                float dp[R * 25], lse[R] = { 1, 2, 3 }, delta[R] = { 0 };
                fill_nan(dp, R * n);
                fill_nan(s, R * n);
                mhsa_softmax_grad_args g = { R, n, s, n, dp, n, mv, lse,
                                             delta, NULL };
                k->softmax_grad(&g);
                for (size_t i = 0; i < R * n; i++)
                    bad += !(s[i] == 0.0f && dp[i] == 0.0f && !signbit(dp[i]));
                ck_assert_msg(bad == 0, "isa %s n %zu case %zu: grad not 0",
                              k->name, n, h);
            }
}
END_TEST

// The range each row sees, key by key, on a long row: p is +0 exactly
// outside it, positive inside, and agrees with scalar; windows of 1, the
// vector width -1/+0/+1 and longer than the row, padding at every offset.
START_TEST(online_window_and_padding_edges)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    static const size_t windows[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17,
                                      31, 33, 70 };
    enum { N = 41, R = 9 };
    unsigned seed = 5000;
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        for (size_t kl = 0; kl <= N + 1; kl += 3)
            for (int causal = 0; causal < 2; causal++) {
                rng g = { ++seed };
                float s[R * N], s2[R * N], mask[R * N];
                float m[R], l[R], m2[R], l2[R], o[R], o2[R];
                fill_uniform(&g, s, R * N, -5.0f, 5.0f);
                fill_uniform(&g, mask, R * N, -1.0f, 0.0f);
                // rows at positions 30..38, keys at 7..47: each row's window
                // and padding fall at a different offset in the tile
                mhsa_mask_view mv = { seed & 1 ? mask : NULL, N, 30, 7,
                                      causal, windows[w], kl ? 7 + kl : 0 };
                for (int r = 0; r < R; r++)
                    for (size_t j = 0; j < N; j++)
                        if (pos_blocked(&mv, (size_t)r, j)) {
                            s[r * N + j] = NAN;
                            mask[r * N + j] = NAN;
                        }
                memcpy(s2, s, sizeof s);
                for (int r = 0; r < R; r++)
                    m[r] = m2[r] = -INFINITY, l[r] = l2[r] = 0.0f,
                    o[r] = o2[r] = 1.0f;
                mhsa_softmax_args a = { R, N, s, N, mv, m, l, o, 1, 1 };
                mhsa_softmax_args b = { R, N, s2, N, mv, m2, l2, o2, 1, 1 };
                k->softmax_online(&a);
                mhsa_kernels_scalar.softmax_online(&b);
                // (counted, one assertion per case: check's assertions
                // cost a message each, which adds up under qemu)
                size_t bad = 0;
                for (int r = 0; r < R; r++) {
                    for (size_t j = 0; j < N; j++) {
                        float p = s[r * N + j], ps = s2[r * N + j];
                        int blk = pos_blocked(&mv, (size_t)r, j);
                        int ok = (blk ? p == 0.0f && !signbit(p) : p > 0.0f)
                              && fabsf(p - ps) <= 2e-6f * fmaxf(1, ps);
                        if (!ok && bad++ < 5)
                            printf("isa %s window %zu klen %zu causal %d "
                                   "row %d key %zu: p %g (scalar %g)\n",
                                   k->name, windows[w], kl, causal, r, j, p,
                                   ps);
                    }
                    bad += m[r] != m2[r];
                    bad += !(fabsf(l[r] - l2[r]) <= 4e-6f * fmaxf(1, l2[r]));
                }
                ck_assert_msg(bad == 0, "isa %s window %zu klen %zu causal "
                              "%d: %zu wrong", k->name, windows[w], kl,
                              causal, bad);
            }
}
END_TEST

// Scores that overflow: +INFINITY keys spread over several tiles of one
// row, NaN under blocked keys (masked, outside the window, past the
// padding), finite scores elsewhere. Every tile step must give p = 1 on
// the +INFINITY keys and 0 elsewhere, alpha = 0 at the tile where the
// first +INFINITY appears (o scaled to 0) and 1 after, l = their count,
// and the normalised output the mean of their value rows; bit for bit the
// scalar kernel (every operation here is exact).
START_TEST(online_inf_scores_across_tiles)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { R = 6, N = 45, DV = 3 };
    static const size_t cuts[][4] = { { 9, 18, 30, 45 }, { 1, 8, 17, 45 },
                                      { 20, 21, 44, 45 }, { 45, 45, 45, 45 } };
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++)
        for (int flavour = 0; flavour < 4; flavour++) {
            rng g = { 600 + c * 4 + (size_t)flavour };
            float s[R * N], mask[R * N], v[N * DV];
            fill_uniform(&g, s, R * N, -4.0f, 4.0f);
            fill_uniform(&g, v, N * DV, -1.0f, 1.0f);
            for (size_t i = 0; i < R * N; i++)
                mask[i] = rng_int(&g, 0, 5) == 0 ? -INFINITY : 0.0f;
            // flavour: 1 mask, 2 window 30 + padding 40 + causal
            mhsa_mask_view mv = { flavour & 1 ? mask : NULL, N, 40, 0,
                                  flavour & 2 ? 1 : 0, flavour & 2 ? 30 : 0,
                                  flavour & 2 ? 40 : 0 };
            // Row r: +INFINITY keys at positions picked per row: row 0 one
            // in the first tile, row 1 first in a later tile, row 2 in
            // every tile, row 3 none (ordinary), row 4 only under blocked
            // keys (ignored), row 5 -INFINITY scores everywhere else.
            for (size_t j = 0; j < N; j++) {
                if (j == 2 || j == 23)
                    s[0 * N + j] = INFINITY;
                if (j == 25 || j == 38)
                    s[1 * N + j] = INFINITY;
                if (j % 7 == 3)
                    s[2 * N + j] = INFINITY;
                s[5 * N + j] = j == 33 ? INFINITY : -INFINITY;
            }
            // (the mask never blocks the +INFINITY keys of rows 0, 1, 5)
            mask[0 * N + 23] = mask[1 * N + 25] = mask[5 * N + 33] = 0.0f;
            for (int r = 0; r < R; r++)
                for (size_t j = 0; j < N; j++)
                    if (blocked(&mv, (size_t)r, j))
                        s[r * N + j] = r == 4 ? INFINITY : NAN;
            float s1[R * N], s2[R * N], m1[R], m2[R], l1[R], l2[R];
            float o1[R * DV] = { 0 }, o2[R * DV] = { 0 };
            memcpy(s1, s, sizeof s);
            memcpy(s2, s, sizeof s);
            for (int r = 0; r < R; r++)
                m1[r] = m2[r] = -INFINITY, l1[r] = l2[r] = 0.0f;
            // Keys of tiles after which the row's max was +INFINITY: their
            // p is 1 or 0 (earlier tiles hold ordinary weights, which the
            // alpha = 0 of the first +INFINITY tile then drops from o).
            int inf_tile[R][N];
            size_t j0 = 0;
            for (int t = 0; t < 4 && j0 < N; t++) {
                size_t j1 = cuts[c][t];
                mhsa_mask_view tv = mv;
                tv.k0 = mv.k0 + j0;
                tv.mask = mv.mask ? mv.mask + j0 : NULL;
                mhsa_softmax_args a1 = { R, j1 - j0, s1 + j0, N, tv, m1, l1,
                                         o1, DV, DV };
                mhsa_softmax_args a2 = { R, j1 - j0, s2 + j0, N, tv, m2, l2,
                                         o2, DV, DV };
                k->softmax_online(&a1);
                mhsa_kernels_scalar.softmax_online(&a2);
                for (int r = 0; r < R; r++)
                    for (size_t j = j0; j < j1; j++)
                        inf_tile[r][j] = m1[r] == INFINITY;
                for (int r = 0; r < R; r++)
                    for (int d = 0; d < DV; d++)
                        for (size_t j = j0; j < j1; j++) {
                            o1[r * DV + d] += s1[r * N + j] * v[j * DV + d];
                            o2[r * DV + d] += s2[r * N + j] * v[j * DV + d];
                        }
                j0 = j1;
            }
            for (int r = 0; r < R; r++) {
                if (r == 3 || r == 4)   // no unblocked +INFINITY key
                    continue;
                double cnt = 0, mean[DV] = { 0 };
                for (size_t j = 0; j < N; j++)
                    if (!blocked(&mv, (size_t)r, j)
                        && s[r * N + j] == INFINITY) {
                        cnt++;
                        for (int d = 0; d < DV; d++)
                            mean[d] += v[j * DV + d];
                    }
                ck_assert_msg(cnt > 0, "test setup: row %d", r);
                ck_assert_msg(m1[r] == INFINITY && l1[r] == (float)cnt,
                              "isa %s cuts %zu flavour %d row %d: m %g l %g, "
                              "want +inf %g", k->name, c, flavour, r, m1[r],
                              l1[r], cnt);
                for (size_t j = 0; j < N; j++) {
                    int top = !blocked(&mv, (size_t)r, j)
                           && s[r * N + j] == INFINITY;
                    if (!inf_tile[r][j])
                        continue;
                    ck_assert_msg(s1[r * N + j] == (top ? 1.0f : 0.0f),
                                  "isa %s row %d key %zu: p %g", k->name, r,
                                  j, s1[r * N + j]);
                }
                for (int d = 0; d < DV; d++) {
                    double y = o1[r * DV + d] / l1[r];
                    ck_assert_msg(fabs(y - mean[d] / cnt) <= 1e-6,
                                  "isa %s row %d: o/l %g want %g", k->name,
                                  r, y, mean[d] / cnt);
                }
            }
            // rows 3 and 4: ordinary rows, finite; blocked +inf ignored
            ck_assert(isfinite(m1[3]) && isfinite(l1[3]) && l1[3] >= 1.0f);
            ck_assert(isfinite(m1[4]) && isfinite(l1[4]) && l1[4] >= 1.0f);
            for (int r = 0; r < R; r++) {
                if (r == 3 || r == 4)
                    continue;
                // p of tiles before the first +INFINITY is each ISA's exp
                for (size_t j = 0; j < N; j++)
                    if (inf_tile[r][j])
                        ck_assert(memcmp(&s1[r * N + j], &s2[r * N + j],
                                         4) == 0);
                ck_assert_msg(m1[r] == m2[r] && l1[r] == l2[r]
                              && memcmp(o1 + r * DV, o2 + r * DV, DV * 4) == 0,
                              "isa %s cuts %zu flavour %d row %d: differs "
                              "from scalar", k->name, c, flavour, r);
            }
        }
}
END_TEST

// NaN with +INFINITY: an unblocked NaN score in a row whose max is
// +INFINITY stays NaN (and so l); a +INFINITY mask entry on an unblocked
// key makes its score NaN (the row's l is NaN), on a blocked key (masked
// by position) it is never read; a -INFINITY score under a +INFINITY mask
// entry is NaN too, not a blocked key.
START_TEST(online_inf_mask_and_nan)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 2; n <= 21; n++)
        for (size_t at = 0; at < n; at++) {
            enum { R = 5 };
            float s[R * 21], mask[R * 21], m[R], l[R], o[R];
            rng g = { n * 100 + at };
            fill_uniform(&g, s, R * n, -2.0f, 2.0f);
            for (size_t i = 0; i < R * n; i++)
                mask[i] = 0.0f;
            s[0 * n + at] = NAN;                 // row 0: NaN and +inf
            s[0 * n + (at + 1) % n] = INFINITY;
            mask[1 * n + at] = INFINITY;         // row 1: +inf mask entry
            mask[2 * n + at] = INFINITY;         // row 2: under -inf score
            s[2 * n + at] = -INFINITY;
            // row 3: +inf mask on a key past the padding: never read
            mask[3 * n + n - 1] = INFINITY;
            s[3 * n + n - 1] = NAN;
            // row 4: an ordinary row with a +inf score and finite mask
            s[4 * n + at] = INFINITY;
            mask[4 * n + at] = -1e30f;
            for (int r = 0; r < R; r++)
                m[r] = -INFINITY, l[r] = 0.0f, o[r] = 1.0f;
            // klen cuts the last key of every row (row 3's is the test)
            mhsa_mask_view mv = { mask, n, 0, 0, 0, 0, n - 1 };
            mhsa_softmax_args a = { R, n, s, n, mv, m, l, o, 1, 1 };
            k->softmax_online(&a);
            int row0_nan_blocked = at == n - 1;   // the NaN is padded away
            ck_assert_msg(row0_nan_blocked ? !isnan(l[0]) : isnan(l[0]),
                          "isa %s n %zu at %zu: row 0 l %g", k->name, n, at,
                          l[0]);
            ck_assert_msg(at == n - 1 ? !isnan(l[1]) : isnan(l[1]),
                          "isa %s n %zu at %zu: +inf mask gave l %g",
                          k->name, n, at, l[1]);
            if (at != n - 1)
                ck_assert(isnan(s[1 * n + at]) && isnan(s[2 * n + at])
                          && isnan(l[2]));
            ck_assert_msg(isfinite(l[3]) && l[3] >= 1.0f
                          && s[3 * n + n - 1] == 0.0f, "isa %s n %zu: "
                          "padded key read", k->name, n);
            // row 4: +inf + (-1e30) = +inf: an overflowed score like any
            if (at != n - 1)
                ck_assert(m[4] == INFINITY && l[4] == 1.0f
                          && s[4 * n + at] == 1.0f);
        }
}
END_TEST

// Backward of rows whose forward max was +INFINITY (lse = +INFINITY):
// p = inf_w[r] on their +INFINITY scores, 0 elsewhere (NaN stays NaN),
// ds = p (dp - delta), exact +0 where p is 0 even over NaN dp; mixed with
// ordinary rows and rows that saw nothing (lse = -INFINITY) in one call,
// with window, padding and mask. p bit for bit scalar's, ds within a
// rounding of it.
START_TEST(grad_inf_rows)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { R = 6 };
    for (size_t n = 1; n <= 37; n++)
        for (int flavour = 0; flavour < 4; flavour++) {
            rng g = { 9000 + n * 4 + (size_t)flavour };
            float s[R * 37], dp[R * 37], mask[R * 37];
            float lse[R], delta[R], inf_w[R];
            fill_uniform(&g, s, R * n, -3.0f, 3.0f);
            fill_uniform(&g, dp, R * n, -2.0f, 2.0f);
            for (size_t i = 0; i < R * n; i++)
                mask[i] = rng_int(&g, 0, 4) == 0 ? -INFINITY : 0.0f;
            mhsa_mask_view mv = { flavour & 1 ? mask : NULL, n, 10, 0,
                                  (flavour & 2) != 0,
                                  flavour & 2 ? 9 : 0, flavour & 2 ? n : 0 };
            for (int r = 0; r < R; r++) {
                delta[r] = rng_uniform(&g, -1.0f, 1.0f);
                lse[r] = r % 3 == 0 ? INFINITY
                       : r % 3 == 1 ? rng_uniform(&g, 3.0f, 6.0f) : -INFINITY;
                inf_w[r] = r % 3 == 0 ? 1.0f / (float)(1 + r) : NAN;
                for (size_t j = 0; j < n; j++) {
                    if (r % 3 == 0 && (j + (size_t)r) % 3 == 0)
                        s[r * n + j] = INFINITY;
                    if (blocked(&mv, (size_t)r, j)) {
                        s[r * n + j] = r == 3 ? INFINITY : NAN;
                        dp[r * n + j] = NAN;
                    }
                }
            }
            s[0] = blocked(&mv, 0, 0) ? s[0] : NAN;   // a NaN score: stays
            float s1[R * 37], d1[R * 37], s2[R * 37], d2[R * 37];
            memcpy(s1, s, sizeof s);
            memcpy(s2, s, sizeof s);
            memcpy(d1, dp, sizeof dp);
            memcpy(d2, dp, sizeof dp);
            mhsa_softmax_grad_args a = { R, n, s1, n, d1, n, mv, lse, delta,
                                         inf_w };
            mhsa_softmax_grad_args b = { R, n, s2, n, d2, n, mv, lse, delta,
                                         inf_w };
            k->softmax_grad(&a);
            mhsa_kernels_scalar.softmax_grad(&b);
            size_t bad = 0;
            for (int r = 0; r < R; r += 3)
                for (size_t j = 0; j < n; j++) {
                    size_t i = (size_t)r * n + j;
                    float want = blocked(&mv, (size_t)r, j) ? 0.0f
                               : isnan(s[i]) ? NAN
                               : s[i] == INFINITY ? inf_w[r] : 0.0f;
                    int ok = isnan(want) ? isnan(s1[i])
                           : s1[i] == want && !signbit(s1[i]);
                    if (want == 0.0f)
                        ok &= d1[i] == 0.0f && !signbit(d1[i]);
                    else if (want > 0.0f)
                        // one rounding of slack: p (dp - delta) may be
                        // evaluated as p dp - p delta with an FMA
                        ok &= fabsf(d1[i] - want * (dp[i] - delta[r]))
                           <= 2.5e-7f * want * (fabsf(dp[i]) + fabsf(delta[r]));
                    if (!ok && bad++ < 5)
                        printf("isa %s n %zu flavour %d row %d key %zu: p %g "
                               "ds %g, want p %g\n", k->name, n, flavour, r,
                               j, s1[i], d1[i], want);
                }
            ck_assert_msg(bad == 0, "isa %s n %zu flavour %d: %zu wrong",
                          k->name, n, flavour, bad);
            for (size_t i = 0; i < R * n; i++) {
                int same_s = memcmp(&s1[i], &s2[i], 4) == 0
                          || (isnan(s1[i]) && isnan(s2[i]));
                int r = (int)(i / n);
                int same_d = memcmp(&d1[i], &d2[i], 4) == 0
                          || (isnan(d1[i]) && isnan(d2[i]))
                          || (s1[i] > 0.0f && fabsf(d1[i] - d2[i])
                              <= 2.5e-7f * s1[i] * (fabsf(dp[i])
                                                    + fabsf(delta[r])));
                // ordinary rows (lse finite) use each ISA's exp
                bad += r % 3 != 1 && !(same_s && same_d);
            }
            ck_assert_msg(bad == 0, "isa %s n %zu flavour %d: %zu elements "
                          "differ from scalar", k->name, n, flavour, bad);
        }
}
END_TEST

// Whole-row softmax of a row holding +INFINITY: 1/count on those entries
// (exactly 1.0f / count), 0 on the rest, -INFINITY entries included.
START_TEST(row_inf_entries)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    for (size_t n = 1; n <= 40; n++)
        for (size_t every = 1; every <= 5; every++) {
            float x[40], y[40], ys[40];
            rng g = { n * 8 + every };
            fill_uniform(&g, x, n, -1e4f, 1e4f);
            size_t cnt = 0;
            for (size_t j = 0; j < n; j++) {
                if ((j + n) % every == 0) {
                    x[j] = INFINITY;
                    cnt++;
                } else if (j % 4 == 1) {
                    x[j] = -INFINITY;
                }
            }
            if (cnt == 0)
                continue;
            k->softmax_row(n, x, y);
            mhsa_kernels_scalar.softmax_row(n, x, ys);
            for (size_t j = 0; j < n; j++) {
                float want = x[j] == INFINITY ? 1.0f / (float)cnt : 0.0f;
                ck_assert_msg(y[j] == want && !signbit(y[j]) && ys[j] == want,
                              "isa %s n %zu: y[%zu] = %g (scalar %g), want %g",
                              k->name, n, j, y[j], ys[j], want);
            }
            k->softmax_row(n, x, x);   // in place
            ck_assert(memcmp(x, y, n * sizeof(float)) == 0);
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

static void exp8_nonpos(const float *x, float *y)
{
    _mm256_storeu_ps(y, mhsa_exp_nonpos_ps__avx2(_mm256_loadu_ps(x)));
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
    // Far outside the range (no clamp first): still +0 and +inf.
    float fx[8] = { -FLT_MAX, -1e30f, -1e10f, -200.0f, FLT_MAX, 1e30f,
                    1e10f, 200.0f };
    exp8(fx, y);
    for (int l = 0; l < 4; l++)
        ck_assert_msg(y[l] == 0.0f && !signbit(y[l]), "exp(%g) = %g", fx[l],
                      y[l]);
    for (int l = 4; l < 8; l++)
        ck_assert_msg(y[l] == INFINITY, "exp(%g) = %g", fx[l], y[l]);

    // The variant for x <= 0 gives exp's bits over [-90, 0], the far
    // negative values, -inf, -0 and NaN.
    float nx[8], a[8], b[8];
    for (size_t i = 0; i < 65536; i += 8) {
        for (int l = 0; l < 8; l++)
            nx[l] = -90.0f * (float)(i + (size_t)l) / 65535.0f;
        if (i == 0) {
            nx[1] = -INFINITY;
            nx[2] = NAN;
            nx[3] = -0.0f;
            nx[4] = -FLT_MAX;
            nx[5] = -1e30f;
        }
        exp8(nx, a);
        exp8_nonpos(nx, b);
        for (int l = 0; l < 8; l++)
            ck_assert_msg(memcmp(&a[l], &b[l], sizeof(float)) == 0,
                          "exp_nonpos(%.9g) = %.9g, exp gives %.9g", nx[l],
                          b[l], a[l]);
    }
}
END_TEST
#endif

// A call over many rows gives each row the bits a call over that row alone
// gives (rows are independent; AVX2 takes 8 rows at a time into the lanes
// of its vectors for tiles of <= 16 keys, AVX-512 16 rows of <= 64 keys,
// see online_lane_groups_equal_one_by_one; other paths one row at a
// time). Two tiles in a row (the second rescales the first's m, l, o),
// causal at several offsets, key padding, a window, a mask, +inf and NaN
// scores (a group that falls back), with and without s_room.
START_TEST(online_rows_together_equal_one_by_one)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    enum { DV = 5, RMAX = 17 };
    static const size_t ns[] = { 1, 3, 7, 8, 9, 12, 15, 16, 17, 24 };
    static const size_t rws[] = { 8, 9, 16, 17 };
    unsigned seed = 900;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t ri = 0; ri < sizeof rws / sizeof rws[0]; ri++)
            for (int variant = 0; variant < 8; variant++) {
                size_t n = ns[ni], R = rws[ri], lds = (n + 7) / 8 * 8 + 8;
                rng g = { ++seed };
                float s[2][RMAX * 32], s1[2][RMAX * 32], mask[RMAX * 24];
                float m[RMAX], l[RMAX], o[RMAX * DV];
                float m1[RMAX], l1[RMAX], o1[RMAX * DV];
                fill_uniform(&g, s[0], R * lds, -6.0f, 6.0f);
                fill_uniform(&g, s[1], R * lds, -6.0f, 6.0f);
                fill_uniform(&g, mask, R * n, -2.0f, 0.0f);
                if (variant == 5)   // an overflowed score, a NaN
                    s[1][3 * lds + n / 2] = INFINITY,
                    s[0][9 % R * lds] = NAN;
                memcpy(s1, s, sizeof s);
                for (size_t r = 0; r < R; r++)
                    m[r] = -INFINITY, l[r] = 0.0f;
                fill_uniform(&g, o, R * DV, -1.0f, 1.0f);
                memcpy(m1, m, sizeof m);
                memcpy(l1, l, sizeof l);
                memcpy(o1, o, sizeof o);
                mhsa_mask_view mv = { NULL, n, variant == 1 ? 5 : 0, 0,
                                      variant < 3, 0, 0 };
                if (variant == 3)
                    mv.klen = n > 2 ? n - 2 : 1;
                if (variant == 4)
                    mv.window = 3, mv.causal = 1, mv.q0 = 2;
                if (variant == 6)
                    mv.mask = mask;
                for (int t = 0; t < 2; t++) {   // tiles at keys 0 and n
                    mhsa_mask_view tv = mv;
                    tv.k0 = (size_t)t * n;
                    if (t == 1 && variant < 3)   // causal: rows past n
                        tv.q0 += n;
                    mhsa_softmax_args all = { R, n, s[t], lds, tv, m, l, o,
                                              DV, DV, variant & 1 ? lds : 0 };
                    k->softmax_online(&all);
                    for (size_t r = 0; r < R; r++) {
                        mhsa_softmax_args one = all;
                        one.rows = 1;
                        one.s = s1[t] + r * lds;
                        one.mv.q0 = tv.q0 + r;
                        one.mv.mask = tv.mask ? tv.mask + r * n : NULL;
                        one.m = m1 + r, one.l = l1 + r, one.o = o1 + r * DV;
                        k->softmax_online(&one);
                    }
                    int same = !memcmp(m, m1, R * sizeof(float))
                            && !memcmp(l, l1, R * sizeof(float))
                            && !memcmp(o, o1, R * DV * sizeof(float));
                    for (size_t r = 0; r < R; r++)
                        same &= !memcmp(s[t] + r * lds, s1[t] + r * lds,
                                        n * sizeof(float));
                    ck_assert_msg(same, "isa %s: rows together differ from "
                                  "one by one, n %zu rows %zu variant %d "
                                  "tile %d", k->name, n, R, variant, t);
                }
            }
}
END_TEST

// Loop index i < N_ISAS: all_isas[i]'s table; N_ISAS: the emulated
// AVX-512 table beside the native one (NULL when it already ran or is
// not built), so both builds of src/avx512/softmax.c are checked.
static const mhsa_kernels *table_at(int i)
{
    return i < N_ISAS ? kernels_or_skip(i) : emulated_beside_native();
}

// One-row calls that redo a group's rows, as online_rows_together_... does.
static void one_by_one(const mhsa_kernels *k, const mhsa_softmax_args *all,
                       float *s1, float *m1, float *l1, float *o1)
{
    for (size_t r = 0; r < all->rows; r++) {
        mhsa_softmax_args one = *all;
        one.rows = 1;
        one.s = s1 + r * all->lds;
        one.mv.q0 = all->mv.q0 + r;
        one.mv.mask = all->mv.mask ? all->mv.mask + r * all->mv.ldmask
                                   : NULL;
        one.m = m1 + r, one.l = l1 + r, one.o = o1 + r * all->ldo;
        k->softmax_online(&one);
    }
}

// The AVX-512 online step takes up to 16 rows at a time for rows of 1..64
// keys, their max and sum trees and bookkeeping in the lanes of one
// vector (softmax.c, rows_in_lanes): each row must get the bits of a
// call over that row alone, all of its row of s (past n too, with
// s_room), m, l and o. Rows 6..40 (whole groups, tails, groups too small
// to take), keys 1..65 (primes, multiples of 16, one past the limit), two
// tiles (the second from finite m, l: o rescaled), and per variant: 0
// plain, 1-3 causal (rows whose key counts differ, offsets), 4 a mask
// with -INFINITY entries, 5 a window (rows not starting at key 0), 6 key
// padding, 7 NaN scores (rows that go NaN) and a +INFINITY one (its group
// falls back), 8 scores of +0 and -0 only (the max's operand order
// decides the sign of m), 9 rows whose every key the mask blocks (-inf
// maxes: a first tile falls back, a second keeps m_old).
START_TEST(online_lane_groups_equal_one_by_one)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    enum { DV = 19, RMAX = 40, NMAX = 65, LDMAX = NMAX + 21 };
    static const size_t ns[] = { 1, 2, 5, 13, 16, 17, 23, 31, 32, 37, 48,
                                 61, 64, 65 };
    static const size_t rws[] = { 6, 7, 15, 16, 17, 23, 32, 40 };
    size_t sz = 2 * RMAX * LDMAX;
    float *s = malloc(sz * sizeof *s), *s1 = malloc(sz * sizeof *s);
    float *mask = malloc(RMAX * NMAX * sizeof *mask);
    float m[RMAX], l[RMAX], o[RMAX * DV], m1[RMAX], l1[RMAX], o1[RMAX * DV];
    ck_assert(s && s1 && mask);
    unsigned seed = 5000;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t ri = 0; ri < sizeof rws / sizeof rws[0]; ri++)
            for (int variant = 0; variant < 10; variant++) {
                size_t n = ns[ni], R = rws[ri], lds = n + 21;
                rng g = { ++seed };
                fill_uniform(&g, s, 2 * R * lds, -6.0f, 6.0f);
                if (variant == 8)
                    for (size_t i = 0; i < 2 * R * lds; i++)
                        s[i] = rng_int(&g, 0, 1) ? 0.0f : -0.0f;
                if (variant == 7) {
                    s[(R - 1) * lds] = NAN;
                    s[(R / 2) * lds + n - 1] = NAN;
                    s[R * lds + 3 * lds + n / 2] = INFINITY;
                }
                for (size_t i = 0; i < R * n; i++)
                    mask[i] = rng_int(&g, 0, 4) == 0 ? -INFINITY
                                                     : rng_uniform(&g, -2.0f,
                                                                   0.0f);
                if (variant == 9)
                    for (size_t r = 1; r < R; r += 5)
                        for (size_t j = 0; j < n; j++)
                            mask[r * n + j] = -INFINITY;
                memcpy(s1, s, sz * sizeof *s);
                for (size_t r = 0; r < R; r++)
                    m[r] = -INFINITY, l[r] = 0.0f;
                fill_uniform(&g, o, R * DV, -1.0f, 1.0f);
                memcpy(m1, m, sizeof m);
                memcpy(l1, l, sizeof l);
                memcpy(o1, o, sizeof o);
                mhsa_mask_view mv = { NULL, n, variant == 2 ? 3 : 0, 0,
                                      variant >= 1 && variant <= 3, 0, 0 };
                if (variant == 4 || variant == 9)
                    mv.mask = mask;
                if (variant == 5)
                    mv.window = 7, mv.causal = 1, mv.q0 = 2;
                if (variant == 6)
                    mv.klen = n / 2 + 1;
                for (int t = 0; t < 2; t++) {   // tiles at keys 0 and n
                    mhsa_mask_view tv = mv;
                    tv.k0 = (size_t)t * n;
                    if (t == 1 && (mv.causal || mv.window))
                        tv.q0 += n;   // rows past n see the second tile
                    if (t == 1 && variant == 3)
                        tv.q0 -= n / 3;   // the first rows see none of it
                    if (t == 1 && variant == 6)
                        tv.klen += n;
                    float *st = s + (size_t)t * R * lds;
                    float *st1 = s1 + (size_t)t * R * lds;
                    mhsa_softmax_args all = { R, n, st, lds, tv, m, l, o,
                                              DV, DV, (ni + ri) & 1 ? lds
                                                                    : 0 };
                    k->softmax_online(&all);
                    one_by_one(k, &all, st1, m1, l1, o1);
                    int same = !memcmp(m, m1, R * sizeof(float))
                            && !memcmp(l, l1, R * sizeof(float))
                            && !memcmp(o, o1, R * DV * sizeof(float))
                            && !memcmp(st, st1, R * lds * sizeof(float));
                    ck_assert_msg(same, "isa %s: a group of rows differs "
                                  "from one by one, n %zu rows %zu variant "
                                  "%d tile %d seed %u", k->name, n, R,
                                  variant, t, seed);
                }
            }
    free(s);
    free(s1);
    free(mask);
}
END_TEST

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
    LOOP(tc, online_empty_ranges);
    LOOP(tc, online_window_and_padding_edges);
    LOOP(tc, online_inf_scores_across_tiles);
    LOOP(tc, online_inf_mask_and_nan);
    LOOP(tc, grad_inf_rows);
    LOOP(tc, row_inf_entries);
    LOOP(tc, online_rows_together_equal_one_by_one);
    tcase_add_loop_test(tc, online_lane_groups_equal_one_by_one, 0,
                        N_ISAS + 1);
#if MHSA_HAVE_AVX2 && defined(__x86_64__)
    tcase_add_test(tc, avx2_exp_accuracy);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
