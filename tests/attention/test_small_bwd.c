// test_small_bwd.c — the small-tile attention backward (kernels.h:
// small_bwd_scores / small_bwd_grads and their fused form attn_small_bwd,
// attn/small_bwd.c) gives the bits of the packed-GEMM path of the same table, on every ISA
// that has it: one head's block run through mhsa__head_backward with the
// table as built and with a copy whose small products are removed, over
// awkward shapes (1, primes, sizes off the vector widths up to the
// 16-key limit and past it), causal with and without a query offset,
// sliding windows, key padding, additive masks with -INFINITY entries,
// strided dO and gradient rows, zeros of both signs, dk/dv accumulating
// onto nonzero values, the dq-only and dk/dv-only passes, and the cases
// that must fall back (a NaN in K, scores overflowing to +INFINITY), and
// the fused kernel declining a row's infinite lse when called alone.
// Also each ISA's values against scalar (a tolerance: FMA or not), and
// softmax_grad's short unmasked rows against its general (masked) path.
// The AVX-512 kernels run twice on a CPU that has them: native (the
// ISA loop) and the SIMDe-emulated build (one loop index more), which
// is what runs them on every other CPU. And every table's fused kernel
// (attn_small_bwd) against the scalar reference, mhsa_attn_small_bwd__scalar
// (the scalar table's slot), over a grid of awkward shapes, within a
// tolerance (bit for bit on the scalar table), and that reference against
// a double-precision evaluation of the tile.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "attn/attention.h"
#include "kernels/kernel_decl.h"

// Loop index i < N_ISAS: all_isas[i]'s table; N_ISAS: the emulated
// AVX-512 table where the loop's avx512 entry is the native one.
#define LOOP(tc, fn) tcase_add_loop_test(tc, fn, 0, N_ISAS + 1)

typedef struct problem {
    size_t tq, tk, dh, q_pos, window, klen, lddo, ldg;
    int causal, use_mask, skip_dq, skip_dkv;
    float *q, *k, *v, *mask, *o, *lse, *dout, *dq, *dk, *dv;
} problem;

// Inputs of a random problem; special: 1 NaN in K, 2 overflowing scores.
static void make(problem *p, rng *r, int special)
{
    size_t tq = p->tq, tk = p->tk, dh = p->dh;
    p->q = calloc(tq * dh, sizeof(float));
    p->k = calloc(tk * dh, sizeof(float));
    p->v = calloc(tk * dh, sizeof(float));
    p->mask = calloc(tq * tk, sizeof(float));
    p->o = calloc(tq * dh, sizeof(float));
    p->lse = calloc(tq, sizeof(float));
    p->dout = calloc(tq * p->lddo, sizeof(float));
    p->dq = calloc(tq * p->ldg, sizeof(float));
    p->dk = calloc(tk * p->ldg, sizeof(float));
    p->dv = calloc(tk * p->ldg, sizeof(float));
    fill_uniform(r, p->q, tq * dh, -1.5f, 1.5f);
    fill_uniform(r, p->k, tk * dh, -1.5f, 1.5f);
    fill_uniform(r, p->v, tk * dh, -1.0f, 1.0f);
    fill_uniform(r, p->dout, tq * p->lddo, -1.0f, 1.0f);
    fill_uniform(r, p->dk, tk * p->ldg, -0.5f, 0.5f);   // accumulated onto
    fill_uniform(r, p->dv, tk * p->ldg, -0.5f, 0.5f);
    fill_uniform(r, p->mask, tq * tk, -2.0f, 2.0f);
    for (size_t i = 0; i < tq * tk; i++)
        if (rng_int(r, 0, 5) == 0)
            p->mask[i] = -INFINITY;
    // Zeros of both signs: whole dO rows, single Q / V elements.
    for (size_t i = 0; i < tq; i++)
        if (rng_int(r, 0, 4) == 0)
            for (size_t d = 0; d < dh; d++)
                p->dout[i * p->lddo + d] = rng_int(r, 0, 1) ? 0.0f : -0.0f;
    for (size_t i = 0; i < tq * dh; i += 3)
        p->q[i] = rng_int(r, 0, 3) ? p->q[i] : -0.0f;
    for (size_t i = 0; i < tk * dh; i += 5)
        p->v[i] = -0.0f;
    if (special == 1)
        p->k[(tk - 1) * dh] = NAN;
    if (special == 2) {   // q . k overflows to +inf for row 0, key 0
        for (size_t d = 0; d < dh; d++)
            p->q[d] = p->k[d] = 3e19f;
    }
}

static void release(problem *p)
{
    free(p->q); free(p->k); free(p->v); free(p->mask); free(p->o);
    free(p->lse); free(p->dout); free(p->dq); free(p->dk); free(p->dv);
}

static head_args args_of(const problem *p)
{
    head_args a;
    memset(&a, 0, sizeof a);
    a.tq = p->tq, a.tk = p->tk, a.dh = p->dh, a.q_pos = p->q_pos;
    a.causal = p->causal, a.window = p->window, a.klen = p->klen;
    a.mask = p->use_mask ? p->mask : NULL, a.ldmask = p->tk;
    a.scale = 1.0f / sqrtf((float)p->dh);
    a.q = p->q, a.k = p->k, a.v = p->v, a.kv_dtype = MHSA_F32;
    a.o = p->o, a.ldo = p->dh, a.lse = p->lse;
    a.dout = p->dout, a.lddo = p->lddo;
    a.dq = p->dq, a.dk = p->dk, a.dv = p->dv, a.ldg = p->ldg;
    a.skip_dq = p->skip_dq, a.skip_dkv = p->skip_dkv;
    a.compute = MHSA_F32;
    return a;
}

// The backward of p on table k: dq, dk, dv copied out (tq + 2 tk rows).
static float *backward(const mhsa_kernels *k, const problem *p)
{
    size_t g = p->ldg, n = (p->tq + 2 * p->tk) * g;
    float *tiles = calloc(mhsa__attn_tile_floats(k, p->dh), sizeof(float));
    float *dk = malloc(p->tk * g * sizeof(float));
    float *dv = malloc(p->tk * g * sizeof(float));
    memcpy(dk, p->dk, p->tk * g * sizeof(float));
    memcpy(dv, p->dv, p->tk * g * sizeof(float));
    head_args a = args_of(p);
    a.dk = dk, a.dv = dv;
    float *out = malloc(n * sizeof(float));
    memcpy(out, p->dq, p->tq * g * sizeof(float));
    a.dq = out;
    mhsa__head_backward(k, &a, tiles);
    memcpy(out + p->tq * g, dk, p->tk * g * sizeof(float));
    memcpy(out + (p->tq + p->tk) * g, dv, p->tk * g * sizeof(float));
    free(tiles); free(dk); free(dv);
    return out;
}

// A random problem: its shape from the case number.
static void shape(problem *p, rng *r, int c)
{
    static const size_t sizes[] = { 1, 2, 3, 5, 7, 8, 9, 11, 12, 13, 15, 16 };
    static const size_t dhs[] = { 1, 2, 3, 5, 7, 8, 9, 12, 13, 16 };
    memset(p, 0, sizeof *p);
    p->tq = sizes[rng_int(r, 0, 11)];
    p->dh = dhs[rng_int(r, 0, 9)];
    p->causal = rng_int(r, 0, 2) != 0;
    // A query offset (a block after cached keys): keys up to 16 in all.
    p->q_pos = rng_int(r, 0, 2) == 0 ? (size_t)rng_int(r, 0, 16 - (int)p->tq)
                                     : 0;
    p->tk = p->q_pos + p->tq;
    if (!p->causal && rng_int(r, 0, 1))
        p->tk = (size_t)rng_int(r, 1, 16);
    if (c % 11 == 10)   // past the small limit: both take the packed path
        p->tk = 17 + (size_t)rng_int(r, 0, 20);
    p->window = rng_int(r, 0, 4) == 0 ? (size_t)rng_int(r, 1, 6) : 0;
    p->klen = rng_int(r, 0, 4) == 0 ? (size_t)rng_int(r, 1, (int)p->tk) : 0;
    p->use_mask = rng_int(r, 0, 3) == 0;
    p->lddo = p->dh + (size_t)rng_int(r, 0, 3);
    p->ldg = p->dh + (size_t)rng_int(r, 0, 5);
    int pass = rng_int(r, 0, 5);
    p->skip_dq = pass == 1;
    p->skip_dkv = pass == 2;
}

START_TEST(small_tile_matches_packed_path)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    if (!k->small_bwd_scores) {
        ck_assert_msg(k->isa != MHSA_ISA_SCALAR && k->isa != MHSA_ISA_AVX2 &&
                      k->isa != MHSA_ISA_AVX512,
                      "%s has the small products", k->name);
        printf("skip: %s has no small backward products\n", k->name);
        return;
    }
    mhsa_kernels packed = *k;   // the same table without them
    packed.small_bwd_scores = NULL;
    packed.small_bwd_grads = NULL;
    packed.attn_small_bwd = NULL;
    // ... and without only their fused form, where the table has one.
    mhsa_kernels unfused = *k;
    unfused.attn_small_bwd = NULL;
    ck_assert_msg(k->attn_small_bwd || (k->isa != MHSA_ISA_AVX512 &&
                                        k->isa != MHSA_ISA_AVX2),
                  "%s has the fused small backward", k->name);
    rng r = { 0x5eed0022u + (uint64_t)_i };
    int cases = test_count(400);
    for (int c = 0; c < cases; c++) {
        problem p;
        shape(&p, &r, c);
        int special = c % 13 == 5 ? 1 : c % 13 == 9 ? 2 : 0;
        make(&p, &r, special);
        head_args a = args_of(&p);
        float *tiles = calloc(mhsa__attn_tile_floats(k, p.dh), sizeof(float));
        mhsa__head_forward(k, &a, tiles);
        free(tiles);
        float *want = backward(&packed, &p), *got = backward(k, &p);
        size_t n = (p.tq + 2 * p.tk) * p.ldg;
        ck_assert_msg(!memcmp(want, got, n * sizeof(float)),
                      "%s case %d: tq %zu tk %zu dh %zu q_pos %zu causal %d "
                      "window %zu klen %zu mask %d skip %d/%d special %d: "
                      "bits differ from the packed path", k->name, c, p.tq,
                      p.tk, p.dh, p.q_pos, p.causal, p.window, p.klen,
                      p.use_mask, p.skip_dq, p.skip_dkv, special);
        if (k->attn_small_bwd) {
            float *three = backward(&unfused, &p);
            ck_assert_msg(!memcmp(three, got, n * sizeof(float)),
                          "%s case %d: tq %zu tk %zu dh %zu: the fused "
                          "kernel's bits differ from the three calls'",
                          k->name, c, p.tq, p.tk, p.dh);
            free(three);
        }
        // Against scalar's values (different rounding: FMA or not).
        const mhsa_kernels *s = mhsa_kernels_for(MHSA_ISA_SCALAR);
        if (special == 0 && s != k) {
            float *ref = backward(s, &p);
            ck_assert_msg(rel_err(got, ref, n) < 1e-4, "%s case %d: %g from "
                          "scalar", k->name, c, rel_err(got, ref, n));
            free(ref);
        }
        free(want);
        free(got);
        release(&p);
    }
}
END_TEST

// softmax_grad on rows of at most 16 keys without a mask (AVX2 and
// AVX-512 take a short-row path there) against the same rows with an
// all-zero mask (the general path; + 0 changes no score that matters):
// the same bits, and nothing written past n.
START_TEST(short_grad_rows_match_masked_path)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    rng r = { 0x9a0022u + (uint64_t)_i };
    int cases = test_count(300);
    for (int c = 0; c < cases; c++) {
        size_t rows = (size_t)rng_int(&r, 1, 20), n = (size_t)rng_int(&r, 1, 16);
        size_t lds = n + 3, sz = rows * lds;
        float *s0 = malloc(sz * sizeof(float)), *d0 = malloc(sz * sizeof(float));
        float *s1 = malloc(sz * sizeof(float)), *d1 = malloc(sz * sizeof(float));
        float *zm = calloc(rows * n, sizeof(float));
        float lse[20], delta[20];
        fill_uniform(&r, s0, sz, -3.0f, 3.0f);
        fill_uniform(&r, d0, sz, -1.0f, 1.0f);
        for (size_t i = 0; i < sz; i += 7)   // odd scores
            s0[i] = i % 3 == 0 ? -INFINITY : i % 3 == 1 ? NAN : -0.0f;
        for (size_t i = 0; i < rows; i++) {
            lse[i] = rng_uniform(&r, -1.0f, 2.0f);
            delta[i] = rng_uniform(&r, -0.5f, 0.5f);
            if (rng_int(&r, 0, 9) == 0)
                lse[i] = -INFINITY;   // a row that saw nothing
        }
        memcpy(s1, s0, sz * sizeof(float));
        memcpy(d1, d0, sz * sizeof(float));
        mhsa_mask_view mv = { NULL, n, (size_t)rng_int(&r, 0, 8),
                              (size_t)rng_int(&r, 0, 8), rng_int(&r, 0, 1),
                              rng_int(&r, 0, 3) ? 0 : (size_t)rng_int(&r, 1, 5),
                              rng_int(&r, 0, 3) ? 0 : (size_t)rng_int(&r, 1, 20) };
        mhsa_softmax_grad_args a = { rows, n, s0, lds, d0, lds, mv, lse, delta,
                                     NULL };
        k->softmax_grad(&a);
        a.s = s1, a.dp = d1, a.mv.mask = zm;
        k->softmax_grad(&a);
        ck_assert_msg(!memcmp(s0, s1, sz * sizeof(float)) &&
                      !memcmp(d0, d1, sz * sizeof(float)),
                      "%s case %d: rows %zu n %zu: short rows differ from the "
                      "general path", k->name, c, rows, n);
        free(s0); free(d0); free(s1); free(d1); free(zm);
    }
}
END_TEST

// The fused kernel's contract (kernels.h): a tile with a row whose lse is
// infinite is declined with nothing written; the same tile with every lse
// finite is taken. Called directly: through the driver both ways can give
// the same numbers, which would hide a kernel that took the tile.
START_TEST(fused_declines_infinite_lse)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k || !k->attn_small_bwd)
        return;
    rng r = { 0x15e0u + (uint64_t)_i };
    float q[256], kk[256], v[256], dout[256], o[256], lse[16];
    float g[3][256], before[3][256];
    size_t r0[16] = { 0 }, kend[16];
    for (int c = 0; c < test_count(200); c++) {
        size_t tq = (size_t)rng_int(&r, 1, 16), n = (size_t)rng_int(&r, 1, 16);
        size_t dh = (size_t)rng_int(&r, 1, 16);
        fill_uniform(&r, q, 256, -1.0f, 1.0f);
        fill_uniform(&r, kk, 256, -1.0f, 1.0f);
        fill_uniform(&r, v, 256, -1.0f, 1.0f);
        fill_uniform(&r, dout, 256, -1.0f, 1.0f);
        fill_uniform(&r, o, 256, -1.0f, 1.0f);
        fill_uniform(&r, lse, 16, 0.5f, 2.0f);
        for (int i = 0; i < 3; i++)
            fill_uniform(&r, g[i], 256, -1.0f, 1.0f);
        memcpy(before, g, sizeof g);
        for (size_t i = 0; i < tq; i++)
            kend[i] = n;
        mhsa_small_bwd_args sb = {
            tq, n, dh, q, kk, v, dout, dh, NULL, 16, NULL, 16,
            1.0f / sqrtf((float)dh), g[0], g[1], g[2], dh, r0, kend, 1, 1,
        };
        mhsa_mask_view mv = { NULL, 0, 0, 0, 0, 0, 0 };
        mhsa_attn_small_bwd_args fa = { &sb, mv, lse, o, dh };
        size_t bad = (size_t)rng_int(&r, 0, (int)tq - 1);
        lse[bad] = rng_int(&r, 0, 1) ? INFINITY : -INFINITY;
        ck_assert_msg(k->attn_small_bwd(&fa) == 0 &&
                      !memcmp(g, before, sizeof g),
                      "%s case %d: tq %zu n %zu dh %zu: row %zu's lse is "
                      "%g and the fused kernel took the tile", k->name, c,
                      tq, n, dh, bad, lse[bad]);
        lse[bad] = 1.0f;
        ck_assert_msg(k->attn_small_bwd(&fa) == 1,
                      "%s case %d: tq %zu n %zu dh %zu: every lse finite "
                      "and the fused kernel declined", k->name, c, tq, n,
                      dh);
    }
}
END_TEST


// ---- against the scalar reference and double precision ----------------

static const size_t grid_rows[] = { 1, 2, 3, 5, 7, 8, 11, 13, 16 };
static const size_t grid_keys[] = { 1, 2, 3, 5, 7, 8, 9, 13, 16 };
static const size_t grid_dh[] = { 1, 2, 3, 5, 7, 8, 9, 13, 15, 16 };
#define LEN(x) (sizeof(x) / sizeof *(x))
enum { M16 = MHSA_SMALL_BWD_MAX, G = M16 * M16 };

// One fused tile of the grid with finite inputs: a random causal offset,
// window and key padding (no additive mask: the fused kernels take none),
// each row's lse its true log-sum-exp (a row that sees no key: any finite
// value), the chains' ranges per key and per row, dO and O rows strided,
// gradients accumulated onto random values.
typedef struct grid_tile {
    float q[G], k[G], v[G], dout[M16 * 20], o[M16 * 20], lse[M16];
    float g0[3][M16 * 20];   // dq, dk, dv before
    size_t r0[M16], kend[M16];
    mhsa_small_bwd_args p;
    mhsa_attn_small_bwd_args f;
} grid_tile;

static double dot_d(const float *x, const float *y, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * y[i];
    return s;
}

static void grid_tile_make(grid_tile *t, rng *r, size_t tq, size_t n,
                           size_t dh)
{
    size_t ld = dh + (size_t)rng_int(r, 0, 3);
    fill_uniform(r, t->q, G, -1.5f, 1.5f);
    fill_uniform(r, t->k, G, -1.5f, 1.5f);
    fill_uniform(r, t->v, G, -1.0f, 1.0f);
    fill_uniform(r, t->dout, M16 * 20, -1.0f, 1.0f);
    fill_uniform(r, t->o, M16 * 20, -1.0f, 1.0f);
    for (int i = 0; i < 3; i++)
        fill_uniform(r, t->g0[i], M16 * 20, -0.5f, 0.5f);
    mhsa_mask_view mv = { NULL, 0, (size_t)rng_int(r, 0, (int)n), 0,
                          rng_int(r, 0, 1), 0, 0 };
    mv.window = rng_int(r, 0, 3) ? 0 : (size_t)rng_int(r, 1, 8);
    mv.klen = rng_int(r, 0, 3) ? 0 : (size_t)rng_int(r, 1, (int)n);
    for (size_t i = 0; i < tq; i++) {
        size_t lo, hi;
        mhsa_mask_view_range(&mv, i, n, &lo, &hi);
        double m = -INFINITY, l = 0.0;
        for (size_t j = lo; j < hi; j++) {
            double s = dot_d(t->q + i * dh, t->k + j * dh, dh);
            m = s > m ? s : m;
        }
        for (size_t j = lo; j < hi; j++)
            l += exp(dot_d(t->q + i * dh, t->k + j * dh, dh) - m);
        t->lse[i] = lo < hi ? (float)(m + log(l)) : 0.5f;
        t->kend[i] = mv.causal ? (mv.q0 + i + 1 < n ? mv.q0 + i + 1 : n) : n;
    }
    for (size_t j = 0; j < n; j++) {
        size_t first = mv.causal && j > mv.q0 ? j - mv.q0 : 0;
        t->r0[j] = first < tq ? first : tq;
    }
    int pass = rng_int(r, 0, 3);
    mhsa_small_bwd_args p = {
        tq, n, dh, t->q, t->k, t->v, t->dout, ld, NULL, M16, NULL, M16,
        1.0f / sqrtf((float)dh), NULL, NULL, NULL, ld, t->r0, t->kend,
        pass != 1, pass != 2,
    };
    t->p = p;
    mhsa_attn_small_bwd_args f = { &t->p, mv, t->lse, t->o, ld };
    t->f = f;
}

// Runs the tile on fused kernel fn into g (dq, dk, dv: copies of g0).
static int grid_tile_run(grid_tile *t,
                         int (*fn)(const mhsa_attn_small_bwd_args *),
                         float g[3][M16 * 20])
{
    memcpy(g, t->g0, sizeof t->g0);
    t->p.dq = g[0], t->p.dk = g[1], t->p.dv = g[2];
    return fn(&t->f);
}

// The tile's gradients in double, from g0 (kernels.h's sums).
static void grid_tile_double(const grid_tile *t, double gd[3][M16 * 20])
{
    const mhsa_small_bwd_args *p = &t->p;
    size_t tq = p->tq, n = p->n, dh = p->dh, ld = p->ldg;
    for (int i = 0; i < 3; i++)
        for (size_t e = 0; e < M16 * 20; e++)
            gd[i][e] = t->g0[i][e];
    for (size_t r = 0; r < tq; r++) {
        size_t lo, hi;
        mhsa_mask_view_range(&t->f.mv, r, n, &lo, &hi);
        const float *dout = p->dout + r * p->lddo;
        double delta = dot_d(dout, t->o + r * t->f.ldo, dh);
        for (size_t j = lo; j < hi; j++) {
            double pr = exp(dot_d(p->q + r * dh, p->k + j * dh, dh) -
                            t->lse[r]);
            double ds = pr * (dot_d(dout, p->v + j * dh, dh) - delta);
            for (size_t d = 0; d < dh; d++) {
                if (p->do_dkv && r >= p->r0[j]) {
                    gd[2][j * ld + d] += pr * dout[d];
                    gd[1][j * ld + d] += ds * p->q[r * dh + d];
                }
                if (p->do_dq && j < p->kend[r])
                    gd[0][r * ld + d] += (double)p->scale * ds *
                                         p->k[j * dh + d];
            }
        }
    }
}

// x within tol of ref, relative to the larger of 1 and |ref|.
static int near_d(double x, double ref, double tol)
{
    return fabs(x - ref) <= tol * (1.0 + fabs(ref));
}

START_TEST(reference_matches_double)
{
    rng r = { 0xdb1eu };
    static grid_tile t;
    static float g[3][M16 * 20];
    static double gd[3][M16 * 20];
    int tiles = 0;
    for (size_t a = 0; a < LEN(grid_rows); a++)
        for (size_t b = 0; b < LEN(grid_keys); b++)
            for (size_t c = 0; c < LEN(grid_dh); c++) {
                size_t tq = grid_rows[a], n = grid_keys[b], dh = grid_dh[c];
                grid_tile_make(&t, &r, tq, n, dh);
                ck_assert_msg(grid_tile_run(&t, mhsa_attn_small_bwd__scalar,
                                            g),
                              "tq %zu n %zu dh %zu: the reference declined "
                              "a finite tile", tq, n, dh);
                grid_tile_double(&t, gd);
                for (int i = 0; i < 3; i++)
                    for (size_t e = 0; e < M16 * 20; e++)
                        ck_assert_msg(near_d(g[i][e], gd[i][e], 2e-5),
                                      "tq %zu n %zu dh %zu causal %d q0 %zu "
                                      "window %zu klen %zu: %s[%zu] %g, "
                                      "double %g", tq, n, dh,
                                      t.f.mv.causal, t.f.mv.q0,
                                      t.f.mv.window, t.f.mv.klen,
                                      i == 0 ? "dq" : i == 1 ? "dk" : "dv",
                                      e, (double)g[i][e], gd[i][e]);
                tiles++;
            }
    printf("scalar reference: %d tiles against double\n", tiles);
}
END_TEST

// Every table's attn_small_bwd against the scalar reference: the tiles
// it takes near the reference's gradients (FMA or not, their exps), the
// scalar table's bit for bit; it must take them all (finite, in sizes).
START_TEST(fused_matches_reference)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    ck_assert_msg(k->attn_small_bwd || k->isa == MHSA_ISA_NEON,
                  "%s: attn_small_bwd is empty", k->name);
    if (!k->attn_small_bwd)
        return;
    rng r = { 0xf00du + (uint64_t)_i };
    static grid_tile t;
    static float g[3][M16 * 20], rg[3][M16 * 20];
    int tiles = 0;
    for (size_t a = 0; a < LEN(grid_rows); a++)
        for (size_t b = 0; b < LEN(grid_keys); b++)
            for (size_t c = 0; c < LEN(grid_dh); c++) {
                size_t tq = grid_rows[a], n = grid_keys[b], dh = grid_dh[c];
                grid_tile_make(&t, &r, tq, n, dh);
                ck_assert(grid_tile_run(&t, mhsa_attn_small_bwd__scalar, rg));
                ck_assert_msg(grid_tile_run(&t, k->attn_small_bwd, g),
                              "%s: tq %zu n %zu dh %zu: declined a finite "
                              "tile", k->name, tq, n, dh);
                int exact = k->isa == MHSA_ISA_SCALAR;
                for (int i = 0; i < 3; i++)
                    for (size_t e = 0; e < M16 * 20; e++)
                        ck_assert_msg(exact ? !memcmp(&g[i][e], &rg[i][e], 4)
                                            : near_d(g[i][e], rg[i][e],
                                                     1e-5),
                                      "%s: tq %zu n %zu dh %zu causal %d "
                                      "q0 %zu window %zu klen %zu: %s[%zu] "
                                      "%g, reference %g", k->name, tq, n,
                                      dh, t.f.mv.causal, t.f.mv.q0,
                                      t.f.mv.window, t.f.mv.klen,
                                      i == 0 ? "dq" : i == 1 ? "dk" : "dv",
                                      e, (double)g[i][e], (double)rg[i][e]);
                tiles++;
            }
    printf("%s: %d grid tiles near the scalar reference\n", k->name,
           tiles);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("small_bwd");
    TCase *tc = tcase_create("small_bwd");
    LOOP(tc, small_tile_matches_packed_path);
    LOOP(tc, short_grad_rows_match_masked_path);
    LOOP(tc, fused_declines_infinite_lse);
    LOOP(tc, fused_matches_reference);
    tcase_add_test(tc, reference_matches_double);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
