// test_small_view.c — the fused forward of small views (kernels.h:
// attn_small, attn/small_view.c) against the tiled path it stands in for,
// bit for bit, on every ISA table that has one: the table's tiled path is
// the same table with attn_small cleared. Random small shapes (rows and
// keys 1..17, head sizes around the vector widths), causal masks with
// offsets, key padding, sliding windows, additive masks with -inf entries
// and whole blocked rows, +inf / NaN mask entries, NaN and inf in Q, K and
// V, scores that overflow; in the library's floating-point state and the
// default one; lse alone, lse with lsum, neither. The outputs' padding
// columns must survive. Enough views must take the fused path (else the
// comparison would test nothing). Where the CPU runs AVX-512 natively the
// SIMDe-emulated AVX-512 table (util.h) runs the same views as well (loop
// index N_ISAS), so both builds of src/avx512/attn_small.c are checked on
// every AVX-512 CPU; elsewhere the emulated table is the AVX-512 entry.
// And the kernel alone against PROT_NONE pages on either side of each of
// its inputs (read-only) and outputs, at the edges of its sizes: masked
// loads, gathers and stores must touch only what it was given. And the
// view read in place in rows of the QKV projection (ldqkv, q scaled on
// load) against the same view packed, bit for bit. And every table's
// kernel against the scalar reference (mhsa_attn_small__scalar, the
// scalar table's slot) within a tolerance over a grid of awkward shapes
// (1, primes, sizes off the vector widths, the 16-row / 16-key edges),
// and that reference against a double-precision evaluation of the view.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "util.h"
#include "attn/attention.h"
#include "attn/small_view.h"
#include "kernels/kernel_decl.h"
#include "core/cpu_features.h"
#include "core/fpenv.h"

static const int dh_choices[] = { 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 24, 31,
                                  32, 33 };
enum { N_CASES = 4000 };

typedef struct view_case {
    size_t tq, tk, dh, ldo, ldmask;
    float *q, *k, *v, *mask;
    head_args a;
    // no window cutting a row's first keys, no non-finite input, no
    // overflow: a view the fused kernel must take when within its sizes
    int plain;
} view_case;

static void poke(rng *g, float *x, size_t n)
{
    static const float bad[] = { NAN, INFINITY, -INFINITY };
    x[rng_int(g, 0, (int)n - 1)] = bad[rng_int(g, 0, 2)];
}

static void make_case(view_case *c, rng *g)
{
    memset(c, 0, sizeof *c);
    size_t tk = (size_t)rng_int(g, 1, 17);
    size_t tq = (size_t)rng_int(g, 1, rng_int(g, 0, 3) ? (int)tk : 17);
    size_t dh = (size_t)dh_choices[rng_int(g, 0, (int)(sizeof dh_choices /
                                                       sizeof *dh_choices) - 1)];
    c->tq = tq, c->tk = tk, c->dh = dh, c->ldo = dh + 3, c->ldmask = tk + 2;
    c->q = malloc(tq * dh * sizeof(float));
    c->k = malloc(tk * dh * sizeof(float));
    c->v = malloc(tk * dh * sizeof(float));
    c->mask = malloc(tq * c->ldmask * sizeof(float));
    int big = rng_int(g, 0, 9) == 0;   // scores that overflow
    float range = big ? 3e18f : 2.0f;
    c->plain = !big;
    fill_uniform(g, c->q, tq * dh, -range, range);
    fill_uniform(g, c->k, tk * dh, -range, range);
    fill_uniform(g, c->v, tk * dh, -2.0f, 2.0f);
    if (rng_int(g, 0, 4) == 0) {   // ties, zero scores of either sign
        fill_small_ints(g, c->q, tq * dh, 1);
        fill_small_ints(g, c->k, tk * dh, 1);
        for (size_t i = 0; i < tq * dh; i++)
            c->q[i] = c->q[i] == 0.0f && rng_int(g, 0, 1) ? -0.0f : c->q[i];
    }
    if (rng_int(g, 0, 11) == 0)
        poke(g, c->q, tq * dh), c->plain = 0;
    if (rng_int(g, 0, 11) == 0)
        poke(g, c->k, tk * dh), c->plain = 0;
    if (rng_int(g, 0, 11) == 0)
        poke(g, c->v, tk * dh), c->plain = 0;
    head_args *a = &c->a;
    a->tq = tq, a->tk = tk, a->dh = dh;
    a->causal = rng_int(g, 0, 1);
    a->q_pos = rng_int(g, 0, 1) ? (tk > tq ? tk - tq : 0)
                                : (size_t)rng_int(g, 0, (int)tk);
    static const size_t windows[] = { 0, 0, 0, 1, 2, 5, 16, 40 };
    a->window = windows[rng_int(g, 0, 7)];
    if (a->window && a->q_pos + tq > a->window)
        c->plain = 0;
    a->klen = rng_int(g, 0, 3) ? 0 : (size_t)rng_int(g, 1, (int)tk);
    int mk = rng_int(g, 0, 3);
    if (mk) {
        fill_uniform(g, c->mask, tq * c->ldmask, -3.0f, 3.0f);
        for (size_t i = 0; mk >= 2 && i < tq * c->ldmask; i++)
            if (rng_int(g, 0, 3) == 0)
                c->mask[i] = -INFINITY;
        if (mk == 3 && rng_int(g, 0, 1)) {   // +inf / NaN entry
            c->mask[rng_int(g, 0, (int)(tq * c->ldmask) - 1)] =
                rng_int(g, 0, 1) ? INFINITY : NAN;
            c->plain = 0;
        } else if (mk == 3) {   // a whole blocked row
            size_t r = (size_t)rng_int(g, 0, (int)tq - 1);
            for (size_t j = 0; j < tk; j++)
                c->mask[r * c->ldmask + j] = -INFINITY;
        }
        a->mask = c->mask;
        a->ldmask = c->ldmask;
    }
    a->scale = 1.0f;
    a->q = c->q, a->k = c->k, a->v = c->v;
    a->k16 = c->k, a->v16 = c->v;
    a->kv_dtype = MHSA_F32;
    a->compute = MHSA_F32;
    a->ldo = c->ldo;
}

static void free_case(view_case *c)
{
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->mask);
}

typedef struct outs {
    float *o, *lse, *lsum;
} outs;

static void outs_alloc(outs *u, const view_case *c)
{
    u->o = alloc_guarded(c->tq * c->ldo);
    u->lse = alloc_guarded(c->tq);
    u->lsum = alloc_guarded(c->tq);
    for (size_t i = 0; i < c->tq * c->ldo; i++)
        u->o[i] = 777.25f;   // padding columns must survive
    fill_nan(u->lse, c->tq);
    fill_nan(u->lsum, c->tq);
}

static void outs_free(outs *u)
{
    free_guarded(u->o);
    free_guarded(u->lse);
    free_guarded(u->lsum);
}

static int outs_same(const outs *x, const outs *y, const view_case *c)
{
    return !memcmp(x->o, y->o, c->tq * c->ldo * sizeof(float)) &&
           !memcmp(x->lse, y->lse, c->tq * sizeof(float)) &&
           !memcmp(x->lsum, y->lsum, c->tq * sizeof(float)) &&
           guard_ok(x->o, c->tq * c->ldo) && guard_ok(x->lse, c->tq) &&
           guard_ok(x->lsum, c->tq);
}

// Runs the view: fused (through the hook, as mhsa__head_forward does) or
// on the tiled path. Returns 1 when the fused kernel took it.
static int run(const mhsa_kernels *k, const head_args *a0, int fused,
               int stats, outs *u, float *tiles)
{
    head_args a = *a0;
    a.o = u->o;
    a.lse = stats ? u->lse : NULL;
    a.lsum = stats == 2 ? u->lsum : NULL;
    if (fused && mhsa__head_forward_small(k, &a))
        return 1;
    mhsa__head_forward(k, &a, tiles);
    return 0;
}

// Loop index i < N_ISAS: all_isas[i]'s table; N_ISAS: the emulated
// AVX-512 table when the native one took index 3 (else NULL: already run,
// or not built).
static const mhsa_kernels *table_at(int i)
{
    return i < N_ISAS ? kernels_or_skip(i) : emulated_beside_native();
}

START_TEST(fused_equals_tiled)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    if (!k->attn_small) {
        printf("%s: no fused small-view kernel (tiled path only)\n",
               k->name);
        return;
    }
    mhsa_kernels tiled = *k;
    tiled.attn_small = NULL;
    float *tiles = malloc(mhsa__attn_tile_floats(k, 40) * sizeof(float));
    rng g = { 0x5e11u + (uint64_t)_i };
    int n = test_count(N_CASES), took = 0, eligible = 0, plain = 0;
    int plain_took = 0;
    mhsa_fpword saved = mhsa__fp_get();
    for (int t = 0; t < n; t++) {
        view_case c;
        make_case(&c, &g);
        int lib_state = t % 2, stats = t % 3;
        mhsa__fp_set(lib_state ? MHSA_LIBRARY_FPWORD : MHSA_DEFAULT_FPWORD);
        outs f, r;
        outs_alloc(&f, &c);
        outs_alloc(&r, &c);
        int fast = run(k, &c.a, 1, stats, &f, tiles);
        run(&tiled, &c.a, 0, stats, &r, tiles);
        mhsa__fp_set(saved);
        took += fast;
        int fits = c.tk <= 16 && c.tq <= 16 && c.dh <= 32;
        eligible += fits;
        plain += fits && c.plain;
        plain_took += fits && c.plain && fast;
        ck_assert_msg(outs_same(&f, &r, &c),
                      "%s case %d (fused %d): tq %zu tk %zu dh %zu causal %d "
                      "q_pos %zu window %zu klen %zu mask %d stats %d "
                      "fpstate %d: fused and tiled bits differ", k->name, t,
                      fast, c.tq, c.tk, c.dh, c.a.causal, c.a.q_pos,
                      c.a.window, c.a.klen, c.a.mask != NULL, stats,
                      lib_state);
        outs_free(&f);
        outs_free(&r);
        free_case(&c);
    }
    printf("%s: %d of %d views fused (%d within its sizes, %d of those "
           "plain, %d of them fused)\n", k->name, took, n, eligible, plain,
           plain_took);
    // Windows, non-finite values and overflow decline some of the views
    // within the sizes (a NaN in a blocked K row may still be fused); the
    // plain ones must all be fused.
    ck_assert_msg(plain_took == plain && plain > n / 8, "%s: only %d of %d "
                  "plain views took the fused path", k->name, plain_took,
                  plain);
    free(tiles);
}
END_TEST

// The view read in place (head_args.ldqkv: q, k and v in rows of the QKV
// projection, q scaled on load) against the same view packed with q
// scaled first, as the split rounds it: the same bits, fused or declined
// alike. Row strides past 3 dh with q, k and v at odd column offsets, so
// a kernel that read a row dh apart or skipped the scaling would differ.
START_TEST(in_place_equals_packed)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k || !k->attn_small)
        return;
    float *tiles = malloc(mhsa__attn_tile_floats(k, 40) * sizeof(float));
    rng g = { 0x1dd9u + (uint64_t)_i };
    int n = test_count(N_CASES / 4), took = 0;
    for (int t = 0; t < n; t++) {
        view_case c;
        make_case(&c, &g);
        size_t tq = c.tq, tk = c.tk, dh = c.dh, rows = tq > tk ? tq : tk;
        size_t off_k = dh + 1, off_v = 2 * dh + 3;
        size_t ld = 3 * dh + 5 + (size_t)rng_int(&g, 0, 7);
        float *qkv = alloc_guarded(rows * ld);
        fill_nan(qkv, rows * ld);   // what no view reads
        float sc = 1.0f / sqrtf((float)dh);
        for (size_t r = 0; r < tq; r++)
            for (size_t d = 0; d < dh; d++) {
                qkv[r * ld + d] = c.q[r * dh + d];
                c.q[r * dh + d] = sc * c.q[r * dh + d];   // the split's q
            }
        for (size_t r = 0; r < tk; r++)
            for (size_t d = 0; d < dh; d++) {
                qkv[r * ld + off_k + d] = c.k[r * dh + d];
                qkv[r * ld + off_v + d] = c.v[r * dh + d];
            }
        head_args strided = c.a;
        strided.q = qkv, strided.k = qkv + off_k, strided.v = qkv + off_v;
        strided.ldqkv = ld, strided.scale = sc;
        c.a.scale = sc;
        int stats = t % 3;
        outs f, r;
        outs_alloc(&f, &c);
        outs_alloc(&r, &c);
        head_args a = strided;
        a.o = f.o, a.lse = stats ? f.lse : NULL;
        a.lsum = stats == 2 ? f.lsum : NULL;
        int fast = mhsa__head_forward_small(k, &a);
        int packed = run(k, &c.a, 1, stats, &r, tiles);
        took += fast;
        ck_assert_msg(fast == packed && (!fast || outs_same(&f, &r, &c)),
                      "%s case %d: tq %zu tk %zu dh %zu ld %zu causal %d "
                      "window %zu mask %d: in place (fused %d) and packed "
                      "(fused %d) differ", k->name, t, tq, tk, dh, ld,
                      c.a.causal, c.a.window, c.a.mask != NULL, fast,
                      packed);
        outs_free(&f);
        outs_free(&r);
        free_guarded(qkv);
        free_case(&c);
    }
    printf("%s: %d of %d views in place fused\n", k->name, took, n);
    ck_assert_int_ge(took, n / 4);
    free(tiles);
}
END_TEST

START_TEST(kernel_stays_in_bounds)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k || !k->attn_small)
        return;
    static const size_t tqs[] = { 1, 5, 12, 13, 16 };
    static const size_t ns[] = { 1, 7, 8, 12, 16 };
    static const size_t dhs[] = { 1, 8, 16, 17, 32 };
    float src[16 * 32];
    rng g = { 0xb0bu };
    fill_uniform(&g, src, 16 * 32, -1.0f, 1.0f);
    int took = 0, runs = 0;
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t c = 0; c < 5; c++)
                for (int v = 0; v < 8; v++) {
                    size_t tq = tqs[a], n = ns[b], dh = dhs[c];
                    guard_side side = v & 1 ? GUARD_BEFORE : GUARD_AFTER;
                    int has_mask = (v >> 1) & 1, causal = (v >> 2) & 1;
                    float *q = guard_copy(tq * dh, side, src, 1);
                    float *kk = guard_copy(n * dh, side, src, 1);
                    float *vv = guard_copy(n * dh, side, src, 1);
                    float *mask = has_mask ? guard_copy(tq * n, side, src, 1)
                                           : NULL;
                    float *o = guard_copy(tq * dh, side, NULL, 0);
                    float *m = guard_copy(tq, side, NULL, 0);
                    float *l = guard_copy(tq, side, NULL, 0);
                    mhsa_attn_small_args sa = {
                        .tq = tq, .n = n, .dh = dh, .q = q, .k = kk,
                        .v = vv, .mv = { mask, n, n > tq ? n - tq : 0, 0,
                                         causal, 0, 0 },
                        .o = o, .ldo = dh, .m = m, .l = l,
                    };
                    took += k->attn_small(&sa);
                    runs++;
                    guard_free(q);
                    guard_free(kk);
                    guard_free(vv);
                    if (mask)
                        guard_free(mask);
                    guard_free(o);
                    guard_free(m);
                    guard_free(l);
                }
    printf("%s: %d of %d guarded views fused\n", k->name, took, runs);
    ck_assert_int_eq(took, runs);   // finite inputs in its sizes: all
}
END_TEST


// ---- against the scalar reference and double precision ----------------

static const size_t grid_tq[] = { 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 15, 16 };
static const size_t grid_n[] = { 1, 2, 3, 5, 7, 8, 9, 12, 13, 15, 16 };
static const size_t grid_dh[] = { 1, 2, 3, 5, 7, 8, 9, 13, 15, 16, 17, 24,
                                  31, 32, 33, 48 };
#define LEN(x) (sizeof(x) / sizeof *(x))

// One view of the grid: finite inputs, a random causal offset, key
// padding, an additive mask with -inf entries, q in place (strided and
// scaled on load) one time in four. Buffers sized for the largest.
typedef struct grid_view {
    float q[16 * 3 * 48], k[16 * 48], v[16 * 48], mask[16 * 16];
    mhsa_attn_small_args a;
} grid_view;

static void grid_make(grid_view *gv, rng *g, size_t tq, size_t n, size_t dh)
{
    fill_uniform(g, gv->q, LEN(gv->q), -2.0f, 2.0f);
    fill_uniform(g, gv->k, LEN(gv->k), -2.0f, 2.0f);
    fill_uniform(g, gv->v, LEN(gv->v), -1.0f, 1.0f);
    fill_uniform(g, gv->mask, LEN(gv->mask), -3.0f, 3.0f);
    for (size_t i = 0; i < LEN(gv->mask); i++)
        if (rng_int(g, 0, 4) == 0)
            gv->mask[i] = -INFINITY;
    int in_place = rng_int(g, 0, 3) == 0;
    mhsa_attn_small_args a = {
        .tq = tq, .n = n, .dh = dh, .q = gv->q, .k = gv->k, .v = gv->v,
        .ldq = in_place ? 3 * dh : 0, .qscale = in_place ? 0.35f : 0.0f,
        .mv = { rng_int(g, 0, 2) == 0 ? gv->mask : NULL, n, 0, 0,
                rng_int(g, 0, 1), 0, 0 },
    };
    a.mv.q0 = (size_t)rng_int(g, 0, (int)n);
    a.mv.klen = rng_int(g, 0, 3) ? 0 : (size_t)rng_int(g, 1, (int)n);
    gv->a = a;
}

// Row r of the view in double: its max score m, sum l and output o (all
// blocked: m -inf, l 0, o 0).
static void view_double(const mhsa_attn_small_args *a, size_t r, double *m,
                        double *l, double *o)
{
    size_t dh = a->dh, ldq = a->ldq ? a->ldq : dh, lo, hi;
    double x[16];
    int seen[16] = { 0 };
    mhsa_mask_view_range(&a->mv, r, a->n, &lo, &hi);
    *m = -INFINITY;
    for (size_t j = lo; j < hi; j++) {
        double add = a->mv.mask ? a->mv.mask[r * a->mv.ldmask + j] : 0.0;
        if (add == -INFINITY)
            continue;
        double s = 0.0;
        for (size_t d = 0; d < dh; d++) {
            float qv = a->q[r * ldq + d];
            if (a->qscale != 0.0f)
                qv = a->qscale * qv;   // the split's rounding
            s += (double)qv * a->k[j * dh + d];
        }
        x[j] = s + add;
        seen[j] = 1;
        *m = x[j] > *m ? x[j] : *m;
    }
    *l = 0.0;
    for (size_t d = 0; d < dh; d++)
        o[d] = 0.0;
    for (size_t j = 0; j < a->n; j++) {
        if (!seen[j])
            continue;
        double p = exp(x[j] - *m);
        *l += p;
        for (size_t d = 0; d < dh; d++)
            o[d] += p * a->v[j * dh + d];
    }
    for (size_t d = 0; *l > 0.0 && d < dh; d++)
        o[d] /= *l;
}

static int near(double x, double ref, double tol)
{
    if (isinf(ref) || isinf(x))
        return x == ref;
    return fabs(x - ref) <= tol * (1.0 + fabs(ref));
}

// The scalar reference against double precision: it takes every finite
// view of the grid, and its o, m and l are the double ones within a few
// fp32 roundings of sums of at most 48 terms.
START_TEST(reference_matches_double)
{
    rng g = { 0xd0b1eu };
    grid_view gv;
    float o[16 * 48], m[16], l[16];
    double od[48];
    int views = 0;
    for (size_t a0 = 0; a0 < LEN(grid_tq); a0++)
        for (size_t b = 0; b < LEN(grid_n); b++)
            for (size_t c = 0; c < LEN(grid_dh); c++) {
                size_t tq = grid_tq[a0], n = grid_n[b], dh = grid_dh[c];
                grid_make(&gv, &g, tq, n, dh);
                gv.a.o = o, gv.a.ldo = dh, gv.a.m = m, gv.a.l = l;
                ck_assert_msg(mhsa_attn_small__scalar(&gv.a),
                              "tq %zu n %zu dh %zu: the reference declined "
                              "a finite view", tq, n, dh);
                for (size_t r = 0; r < tq; r++) {
                    double md, ld;
                    view_double(&gv.a, r, &md, &ld, od);
                    int ok = near(m[r], md, 1e-5) && near(l[r], ld, 1e-5);
                    for (size_t d = 0; d < dh; d++)
                        ok &= near(o[r * dh + d], od[d], 1e-5);
                    ck_assert_msg(ok, "tq %zu n %zu dh %zu causal %d q0 "
                                  "%zu klen %zu mask %d row %zu: m %g l %g "
                                  "(double %g %g)", tq, n, dh,
                                  gv.a.mv.causal, gv.a.mv.q0, gv.a.mv.klen,
                                  gv.a.mv.mask != NULL, r, (double)m[r],
                                  (double)l[r], md, ld);
                }
                views++;
            }
    printf("scalar reference: %d views against double\n", views);
}
END_TEST

// Every table's attn_small against the scalar reference over the grid:
// where the table's kernel takes a view (its own size limits), its o, m
// and l are the reference's within the roundings by which the tables
// differ (FMA or not, their exps, sum trees); the scalar table's is the
// reference itself, bit for bit.
START_TEST(kernel_matches_reference)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    ck_assert_msg(k->attn_small || k->isa == MHSA_ISA_NEON,
                  "%s: attn_small is empty", k->name);
    if (!k->attn_small)
        return;
    rng g = { 0x4ef5u + (uint64_t)_i };
    grid_view gv;
    float o[16 * 48], m[16], l[16], ro[16 * 48], rm[16], rl[16];
    int took = 0, views = 0;
    for (size_t a0 = 0; a0 < LEN(grid_tq); a0++)
        for (size_t b = 0; b < LEN(grid_n); b++)
            for (size_t c = 0; c < LEN(grid_dh); c++) {
                size_t tq = grid_tq[a0], n = grid_n[b], dh = grid_dh[c];
                grid_make(&gv, &g, tq, n, dh);
                mhsa_attn_small_args ra = gv.a;
                ra.o = ro, ra.ldo = dh, ra.m = rm, ra.l = rl;
                ck_assert(mhsa_attn_small__scalar(&ra));
                mhsa_attn_small_args ka = gv.a;
                ka.o = o, ka.ldo = dh, ka.m = m, ka.l = l;
                views++;
                if (!k->attn_small(&ka))
                    continue;
                took++;
                int exact = k->isa == MHSA_ISA_SCALAR, ok = 1;
                for (size_t r = 0; r < tq; r++) {
                    ok &= exact ? m[r] == rm[r] && l[r] == rl[r]
                                : near(m[r], rm[r], 1e-5) &&
                                      near(l[r], rl[r], 1e-5);
                    for (size_t d = 0; d < dh; d++)
                        ok &= exact ? !memcmp(&o[r * dh + d],
                                              &ro[r * dh + d], 4)
                                    : near(o[r * dh + d], ro[r * dh + d],
                                           1e-5);
                }
                ck_assert_msg(ok, "%s: tq %zu n %zu dh %zu causal %d q0 "
                              "%zu klen %zu mask %d in place %d: differs "
                              "from the scalar reference", k->name, tq, n,
                              dh, gv.a.mv.causal, gv.a.mv.q0, gv.a.mv.klen,
                              gv.a.mv.mask != NULL, gv.a.ldq != 0);
            }
    printf("%s: %d of %d grid views taken, all near the reference\n",
           k->name, took, views);
    ck_assert_int_ge(took, views / 4);
}
END_TEST

int main(void)
{
    note_quick("a quarter of the random views");
    Suite *s = suite_create("small_view");
    TCase *tc = tcase_create("small_view");
    tcase_add_loop_test(tc, fused_equals_tiled, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, kernel_stays_in_bounds, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, in_place_equals_packed, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, kernel_matches_reference, 0, N_ISAS + 1);
    tcase_add_test(tc, reference_matches_double);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
