// test_adversarial.c — inputs a server may be fed: hostile masks, NaN/inf,
// extreme and subnormal values, edge shapes, sizes that overflow size_t,
// buffers against guard pages (every entry point, every ISA, both ends), and
// the caller's floating-point control state. Expected results are the
// contract's (shared API.md): exact zeros where it says so, NaN only where a
// row reads it, never a byte outside the given shapes.
#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "attn/attention.h"
#include "blockutil.h"
#include "guard.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

// Selects all_isas[i] for this (forked) test; 0 when it is not available.
static int use_isa(int i)
{
    if (!kernels_or_skip(i))
        return 0;
    ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
    return 1;
}

static size_t key_tile(void) { return mhsa__attn_bc(mhsa__kernels()); }

// Outputs of one forward (+ optional backward) of a problem.
typedef struct run {
    float *y, *attn, *dx;
    mhsa_grads *g;
} run;

static void run_free(run *r)
{
    free(r->y);
    free(r->attn);
    free(r->dx);
    mhsa_grads_destroy(r->g);
    memset(r, 0, sizeof *r);
}

// Forward with attention weights, then backward with p->dy when dy != NULL.
static run run_problem(const problem *p, const float *x, const float *mask,
                       const float *dy)
{
    int B = p->B, T = p->T, D = p->cfg.d_model, H = p->cfg.n_heads;
    size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
    run r = { malloc(ny * sizeof(float)), malloc(na * sizeof(float)), NULL,
              NULL };
    mhsa_block *blk = problem_block(p);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, B, T, mask, r.y, r.attn),
                     MHSA_OK);
    if (dy) {
        r.dx = malloc(ny * sizeof(float));
        ck_assert_int_eq(mhsa_grads_create(blk, &r.g), MHSA_OK);
        ck_assert_int_eq(mhsa_backward(blk, ws, dy, r.dx, r.g), MHSA_OK);
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return r;
}

// Is every key of row t blocked (causal rule or -INFINITY mask)?
static int row_dead(const float *mask, int T, int causal, int t)
{
    for (int j = 0; j < T; j++) {
        if (causal && j > t)
            continue;
        if (!mask || mask[(size_t)t * T + j] != -INFINITY)
            return 0;
    }
    return 1;
}

// max |a - b| / max(1, max |b|) over the rows (B*T of width w) with
// keep[row % T] set.
static double rows_err(const float *a, const double *b, int B, int T,
                       size_t w, const int *keep)
{
    double num = 0, den = 1;
    for (int r = 0; r < B * T; r++) {
        if (!keep[r % T])
            continue;
        for (size_t c = 0; c < w; c++) {
            double d = fabs((double)a[r * w + c] - b[r * w + c]);
            if (!(d <= num))   // NaN counts as infinitely wrong
                num = isnan(d) ? INFINITY : d;
            if (fabs(b[r * w + c]) > den)
                den = fabs(b[r * w + c]);
        }
    }
    return num / den;
}

static int all_zero(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0.0f)
            return 0;
    return 1;
}

// ---- masks ------------------------------------------------------------------

// Rows of the mask: 0 all -inf, 1 all -FLT_MAX (only when with_flt_max:
// the reference adds in double, where -FLT_MAX does not absorb the score),
// 2 -inf on the first key tile only and tile+3 likewise, open after it
// (pytorch#127055), 3 -inf on all but the last key, 4 only key 0 open;
// random finite, -1e30 and -inf entries elsewhere.
static void hostile_mask(float *mask, int T, size_t tile, int with_flt_max,
                         rng *r)
{
    for (size_t i = 0; i < (size_t)T * T; i++) {
        int c = rng_int(r, 0, 7);
        mask[i] = c == 0 ? -INFINITY : c == 1 ? -1e30f
                : rng_uniform(r, -3.0f, 2.0f);
    }
    for (int j = 0; j < T; j++) {
        mask[0 * T + j] = -INFINITY;
        if (with_flt_max)
            mask[1 * T + j] = -FLT_MAX;
        mask[2 * T + j] = (size_t)j < tile ? -INFINITY : 0.0f;
        mask[3 * T + j] = j < T - 1 ? -INFINITY : 0.5f;
        mask[4 * T + j] = j == 0 ? 0.25f : -INFINITY;
        // open keys only after the first tile, also for a causal row
        mask[(tile + 3) * T + j] = (size_t)j < tile ? -INFINITY : 0.0f;
    }
}

START_TEST(masked_rows_give_exact_zeros)
{
    if (!use_isa(_i))
        return;
    size_t tile = key_tile();
    int T = (int)(2 * tile + 1), B = 2, D = 16, H = 2;
    for (int causal = 0; causal <= 1; causal++) {
        rng rg = { 100 + (uint64_t)causal };
        problem p;
        problem_make(&p, &rg, B, T, D, H, causal, 1, MASK_RANDOM);
        hostile_mask(p.mask, T, tile, 1, &rg);
        size_t ny = (size_t)B * T * D, nat = (size_t)T;
        // dy only on the fully masked rows: every gradient but b_out's is 0.
        float *dy_dead = calloc(ny, sizeof(float));
        int *dead = calloc((size_t)T, sizeof(int));
        for (int t = 0; t < T; t++)
            dead[t] = row_dead(p.mask, T, causal, t);
        ck_assert(dead[0]);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                if (dead[t])
                    memcpy(dy_dead + ((size_t)b * T + t) * D,
                           p.dy + ((size_t)b * T + t) * D,
                           (size_t)D * sizeof(float));
        run r = run_problem(&p, p.x, p.mask, dy_dead);
        ck_assert(all_finite(r.y, ny));
        ck_assert(all_finite(r.attn, (size_t)B * H * T * T));
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *yr = r.y + ((size_t)b * T + t) * D;
                for (int h = 0; h < H; h++) {
                    const float *w = r.attn +
                        (((size_t)b * H + h) * T + t) * nat;
                    double sum = 0;
                    for (int j = 0; j < T; j++) {
                        int blk = (causal && j > t) ||
                                  p.mask[(size_t)t * T + j] == -INFINITY;
                        if (blk)
                            ck_assert_msg(w[j] == 0.0f && !signbit(w[j]),
                                          "blocked weight (%d,%d) = %g", t,
                                          j, (double)w[j]);
                        ck_assert(w[j] >= 0.0f);
                        sum += w[j];
                    }
                    if (dead[t])
                        ck_assert_msg(sum == 0.0, "dead row %d sums %g", t,
                                      sum);
                    else
                        ck_assert_msg(fabs(sum - 1.0) < 1e-5,
                                      "row %d sums %.9g", t, sum);
                }
                if (dead[t])
                    ck_assert_msg(!memcmp(yr, p.b_out,
                                          (size_t)D * sizeof(float)),
                                  "dead row %d: y != b_out", t);
            }
        // -FLT_MAX is finite: added to every score it absorbs them all in
        // fp32, so the row is uniform (PyTorch gives the same), not zero.
        if (!causal)
            for (int h = 0; h < H; h++)
                for (int j = 0; j < T; j++) {
                    float w = r.attn[((size_t)h * T + 1) * T + j];
                    ck_assert_msg(fabsf(w - 1.0f / (float)T) <
                                  1e-6f / (float)T, "-FLT_MAX row: w[%d] = "
                                  "%.9g", j, (double)w);
                }
        // Gradients through fully masked rows are exactly zero.
        size_t d = (size_t)D;
        ck_assert(all_zero(r.dx, ny));
        ck_assert(all_zero(r.g->w_qkv, 3 * d * d));
        ck_assert(all_zero(r.g->b_qkv, 3 * d));
        ck_assert(all_zero(r.g->w_out, d * d));
        for (size_t c = 0; c < d; c++) {
            float s = 0.0f;
            for (size_t row = 0; row < (size_t)B * T; row++)
                s += dy_dead[row * d + c];
            ck_assert(r.g->b_out[c] == s);
        }
        run_free(&r);

        // The same rows against the double reference, forward and
        // backward, with the -FLT_MAX row replaced (the reference adds in
        // double, where -FLT_MAX does not absorb the score).
        hostile_mask(p.mask, T, tile, 0, &rg);
        r = run_problem(&p, p.x, p.mask, p.dy);
        ref_mha m = problem_ref(&p);
        double *ry = malloc(ny * sizeof(double));
        double *rdx = malloc(ny * sizeof(double));
        double *rgq = malloc(3 * d * d * sizeof(double));
        ref_forward(&m, ry, NULL);
        ref_backward(&m, p.dy, rdx, rgq, NULL, NULL, NULL);
        int *all = malloc((size_t)T * sizeof(int));
        for (int t = 0; t < T; t++)
            all[t] = 1;
        double ey = rows_err(r.y, ry, B, T, d, all);
        double edx = rows_err(r.dx, rdx, B, T, d, all);
        double egq = rel_err_d(r.g->w_qkv, rgq, 3 * d * d);
        ck_assert_msg(ey < 1e-4 && edx < 1e-4 && egq < 1e-4,
                      "causal=%d: y %.3g dx %.3g dWqkv %.3g", causal, ey,
                      edx, egq);
        run_free(&r);
        free(ry);
        free(rdx);
        free(rgq);
        free(all);
        free(dy_dead);
        free(dead);
        problem_free(&p);
    }
}
END_TEST

// Random block masks: 8x8 blocks each open, -inf or a random finite value.
START_TEST(random_block_masks_match_reference)
{
    if (!use_isa(_i))
        return;
    int T = (int)key_tile() + 9, B = 1, D = 12, H = 3;
    rng rg = { 7 };
    for (int rep = 0; rep < 3; rep++) {
        problem p;
        problem_make(&p, &rg, B, T, D, H, rep == 2, 1, MASK_RANDOM);
        for (int bi = 0; bi < T; bi += 8)
            for (int bj = 0; bj < T; bj += 8) {
                int c = rng_int(&rg, 0, 2);
                float v = c == 0 ? 0.0f : c == 1 ? -INFINITY
                        : rng_uniform(&rg, -4.0f, 4.0f);
                for (int i = bi; i < bi + 8 && i < T; i++)
                    for (int j = bj; j < bj + 8 && j < T; j++)
                        p.mask[(size_t)i * T + j] = v;
            }
        size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
        run r = run_problem(&p, p.x, p.mask, p.dy);
        ref_mha m = problem_ref(&p);
        double *ry = malloc(ny * sizeof(double));
        double *ra = malloc(na * sizeof(double));
        double *rdx = malloc(ny * sizeof(double));
        ref_forward(&m, ry, ra);
        ref_backward(&m, p.dy, rdx, NULL, NULL, NULL, NULL);
        double e[3] = { rel_err_d(r.y, ry, ny), rel_err_d(r.attn, ra, na),
                        rel_err_d(r.dx, rdx, ny) };
        ck_assert_msg(e[0] < 1e-4 && e[1] < 1e-4 && e[2] < 1e-4,
                      "rep %d: y %.3g attn %.3g dx %.3g", rep, e[0], e[1],
                      e[2]);
        for (int t = 0; t < T; t++)
            if (row_dead(p.mask, T, p.cfg.causal, t))
                ck_assert(!memcmp(r.y + (size_t)t * D, p.b_out,
                                  (size_t)D * sizeof(float)));
        run_free(&r);
        free(ry);
        free(ra);
        free(rdx);
        problem_free(&p);
    }
}
END_TEST

// A token whose key is blocked for every query and whose own row is fully
// masked: NaN or inf in it must reach nothing (forward or backward) but the
// QKV weight gradient, whose sum over rows multiplies x itself.
START_TEST(nonfinite_blocked_token_reaches_nothing)
{
    if (!use_isa(_i))
        return;
    int T = (int)key_tile() + 5, B = 2, D = 16, H = 4;
    for (int causal = 0; causal <= 1; causal++) {
        rng rg = { 31 + (uint64_t)causal };
        problem p;
        problem_make(&p, &rg, B, T, D, H, causal, 1, MASK_RANDOM);
        int jb = causal ? T - 1 : T / 2;   // the poisoned token
        for (int i = 0; i < T; i++) {
            p.mask[(size_t)jb * T + i] = -INFINITY;   // row jb sees nothing
            p.mask[(size_t)i * T + jb] = -INFINITY;   // nobody sees key jb
        }
        size_t ny = (size_t)B * T * D, d = (size_t)D;
        float *xs[3];
        const float poison[3] = { 0.0f, NAN, INFINITY };
        run r[3];
        for (int v = 0; v < 3; v++) {
            xs[v] = malloc(ny * sizeof(float));
            memcpy(xs[v], p.x, ny * sizeof(float));
            for (int b = 0; b < B; b++)
                for (size_t c = 0; c < d; c++)
                    xs[v][((size_t)b * T + jb) * d + c] =
                        c % 3 == 1 ? -poison[v] : poison[v];
            r[v] = run_problem(&p, xs[v], p.mask, p.dy);
        }
        // NaN and inf take the same (non-finite) path: the same bits.
        ck_assert(!memcmp(r[1].y, r[2].y, ny * sizeof(float)));
        ck_assert(!memcmp(r[1].dx, r[2].dx, ny * sizeof(float)));
        ck_assert(!memcmp(r[1].attn, r[2].attn,
                          (size_t)B * H * T * T * sizeof(float)));
        ref_mha m = problem_ref(&p);
        m.x = xs[0];
        double *ry = malloc(ny * sizeof(double));
        double *rdx = malloc(ny * sizeof(double));
        double *rbq = malloc(3 * d * sizeof(double));
        double *rgo = malloc(d * d * sizeof(double));
        ref_forward(&m, ry, NULL);
        ref_backward(&m, p.dy, rdx, NULL, rbq, rgo, NULL);
        for (int v = 1; v < 3; v++) {
            ck_assert(all_finite(r[v].y, ny) && all_finite(r[v].dx, ny));
            ck_assert(all_finite(r[v].attn, (size_t)B * H * T * T));
            ck_assert(all_finite(r[v].g->b_qkv, 3 * d));
            ck_assert(all_finite(r[v].g->w_out, d * d));
            double e[4] = { rel_err_d(r[v].y, ry, ny),
                            rel_err_d(r[v].dx, rdx, ny),
                            rel_err_d(r[v].g->b_qkv, rbq, 3 * d),
                            rel_err_d(r[v].g->w_out, rgo, d * d) };
            ck_assert_msg(e[0] < 1e-4 && e[1] < 1e-4 && e[2] < 1e-4 &&
                          e[3] < 1e-4, "causal=%d poison=%g: y %.3g dx %.3g "
                          "db_qkv %.3g dW_out %.3g", causal,
                          (double)poison[v], e[0], e[1], e[2], e[3]);
            for (int b = 0; b < B; b++) {
                size_t row = ((size_t)b * T + jb) * d;
                ck_assert(!memcmp(r[v].y + row, p.b_out, d * sizeof(float)));
                ck_assert(all_zero(r[v].dx + row, d));
            }
        }
        for (int v = 0; v < 3; v++) {
            run_free(&r[v]);
            free(xs[v]);
        }
        free(ry);
        free(rdx);
        free(rbq);
        free(rgo);
        problem_free(&p);
    }
}
END_TEST

// NaN/inf in what a row reads reaches that row; other rows keep their bits
// (other sequences) or stay finite and correct (same sequence).
START_TEST(nonfinite_read_values_propagate)
{
    if (!use_isa(_i))
        return;
    int T = 21, B = 2, D = 8, H = 2;
    size_t d = (size_t)D, ny = (size_t)B * T * D;
    rng rg = { 55 };
    for (int causal = 0; causal <= 1; causal++) {
        problem p;
        problem_make(&p, &rg, B, T, D, H, causal, 1, MASK_NONE);
        run clean = run_problem(&p, p.x, NULL, NULL);
        // 1. NaN in token 9 of sequence 0.
        float *x = malloc(ny * sizeof(float));
        memcpy(x, p.x, ny * sizeof(float));
        x[9 * d + 3] = NAN;
        run r = run_problem(&p, x, NULL, NULL);
        for (int t = 0; t < T; t++) {
            const float *yr = r.y + (size_t)t * d;
            int reads = !causal || t >= 9;
            for (size_t c = 0; c < d; c++)
                ck_assert_msg(reads ? isnan(yr[c]) : isfinite(yr[c]),
                              "causal=%d row %d col %zu = %g", causal, t, c,
                              (double)yr[c]);
        }
        if (causal) {   // rows before the NaN: still the clean values
            size_t n = 9 * d;
            ck_assert(rel_err(r.y, clean.y, n) < 1e-5);
            // A NaN row's blocked weights stay exact zeros (found by
            // fuzz_forward: the NaN row sum used to multiply them).
            for (int h = 0; h < H; h++)
                for (int t = 9; t < T; t++)
                    for (int j = t + 1; j < T; j++) {
                        float w = r.attn[((size_t)h * T + t) * T + j];
                        ck_assert_msg(w == 0.0f && !signbit(w),
                                      "NaN row %d: blocked weight %d = %g",
                                      t, j, (double)w);
                    }
        }
        ck_assert(!memcmp(r.y + (size_t)T * d, clean.y + (size_t)T * d,
                          (size_t)T * d * sizeof(float)));
        run_free(&r);
        // 2. NaN and +inf in one finite mask entry each: only that row.
        float *mask = calloc((size_t)T * T, sizeof(float));
        mask[4 * T + 2] = NAN;
        mask[11 * T + 0] = INFINITY;
        r = run_problem(&p, p.x, mask, NULL);
        mask[4 * T + 2] = mask[11 * T + 0] = 0.0f;
        run z = run_problem(&p, p.x, mask, NULL);   // an all-zero mask
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                size_t row = ((size_t)b * T + t) * d;
                if (t == 4 || t == 11)
                    for (size_t c = 0; c < d; c++)
                        ck_assert(isnan(r.y[row + c]));
                else
                    ck_assert(!memcmp(r.y + row, z.y + row,
                                      d * sizeof(float)));
            }
        run_free(&r);
        run_free(&z);
        run_free(&clean);
        free(mask);
        free(x);
        problem_free(&p);
    }
}
END_TEST

// The one-token paths (T = 1 forward, token-by-token decode) stream K/V in
// key chunks; a token whose every score is NaN must come out NaN there too,
// not as the zero context of a fully masked row (found by fuzz_forward).
START_TEST(nonfinite_token_propagates_in_decode)
{
    if (!use_isa(_i))
        return;
    int T = 9, D = 8, H = 2;
    size_t d = (size_t)D;
    rng rg = { 56 };
    problem p;
    problem_make(&p, &rg, 1, T, D, H, 1, 1, MASK_NONE);
    for (size_t c = 0; c < d; c++)
        p.x[3 * d + c] = NAN;
    mhsa_block *blk = problem_block(&p);
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, T, &c), MHSA_OK);
    float y[8];
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, p.x + t * d, 1, 1,
                                             y), MHSA_OK);
        for (size_t k = 0; k < d; k++)
            ck_assert_msg(t < 3 ? isfinite(y[k]) : isnan(y[k]),
                          "decode token %d: y[%zu] = %g", t, k, (double)y[k]);
    }
    ck_assert_int_eq(mhsa_forward(blk, ws, p.x + 3 * d, 1, 1, NULL, y, NULL),
                     MHSA_OK);
    for (size_t k = 0; k < d; k++)
        ck_assert(isnan(y[k]));
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    problem_free(&p);
}
END_TEST

// ---- extreme values ---------------------------------------------------------

// Identity projections (D = H * dh, no bias): q = x / sqrt(dh), k = v = x,
// so scores are x_i . x_j / sqrt(dh) and their size is set through x.
static void identity_problem(problem *p, rng *rg, int B, int T, int D, int H,
                             int causal)
{
    problem_make(p, rg, B, T, D, H, causal, 0, MASK_NONE);
    size_t d = (size_t)D;
    memset(p->w_qkv, 0, 3 * d * d * sizeof(float));
    memset(p->w_out, 0, d * d * sizeof(float));
    for (size_t i = 0; i < d; i++) {
        for (int m = 0; m < 3; m++)
            p->w_qkv[(m * d + i) * d + i] = 1.0f;
        p->w_out[i * d + i] = 1.0f;
    }
}

START_TEST(huge_scores_stay_finite)
{
    if (!use_isa(_i))
        return;
    int T = 37, B = 1, D = 8, H = 2;
    size_t ny = (size_t)T * D, na = (size_t)H * T * T;
    // Largest |score| ~ a^2 * dh / sqrt(dh) = 2 a^2 for dh = 4.
    const float scale[] = { 70.0f, 1e10f, 1e18f };
    for (size_t s = 0; s < sizeof scale / sizeof *scale; s++)
        for (int causal = 0; causal <= 1; causal++) {
            rng rg = { 900 + s };
            problem p;
            identity_problem(&p, &rg, B, T, D, H, causal);
            for (size_t i = 0; i < ny; i++)
                p.x[i] *= scale[s];
            run r = run_problem(&p, p.x, NULL, p.dy);
            ck_assert_msg(all_finite(r.y, ny) && all_finite(r.attn, na),
                          "scale %g causal %d", (double)scale[s], causal);
            ref_mha m = problem_ref(&p);
            double *ry = malloc(ny * sizeof(double));
            double *ra = malloc(na * sizeof(double));
            ref_forward(&m, ry, ra);
            // fp32 scores of size S carry an absolute error ~S * 6e-8.
            double ey = rel_err_d(r.y, ry, ny), ea = rel_err_d(r.attn, ra, na);
            double tol = s == 0 ? 2e-3 : 1e-4;   // near-one-hot beyond
            ck_assert_msg(ey < tol && ea < tol,
                          "scale %g causal %d: y %.3g attn %.3g",
                          (double)scale[s], causal, ey, ea);
            if (s == 0)
                ck_assert(all_finite(r.dx, ny));
            run_free(&r);
            free(ry);
            free(ra);
            problem_free(&p);
        }
}
END_TEST

// A -FLT_MAX mask plus a large negative score overflows to -inf in fp32:
// such a key gets weight 0, and a row where that happens to every key gets
// zeros, never NaN. Same-sign tokens score +S, others -S.
START_TEST(flt_max_mask_plus_negative_score)
{
    if (!use_isa(_i))
        return;
    int T = 6, D = 4, H = 1;
    size_t d = (size_t)D;
    for (int flip = 0; flip <= 1; flip++) {
        rng rg = { 3 };
        problem p;
        identity_problem(&p, &rg, 1, T, D, H, 0);
        if (flip)   // W_k = -I: a token's own score is -S too
            for (size_t i = 0; i < d; i++)
                p.w_qkv[(d + i) * d + i] = -1.0f;
        const float a = 0x1p53f;   // S = a^2 * 4 / 2 = 2^107 > ulp(FLT_MAX)
        int sign[6] = { 1, 1, -1, 1, -1, 1 }, same = 0;
        if (flip)
            for (int t = 0; t < T; t++)
                sign[t] = 1;
        for (int t = 0; t < T; t++) {
            same += sign[t] == 1;
            for (size_t c = 0; c < d; c++)
                p.x[t * d + c] = (float)sign[t] * a;
        }
        float *mask = malloc((size_t)T * T * sizeof(float));
        for (int i = 0; i < T * T; i++)
            mask[i] = -FLT_MAX;
        run r = run_problem(&p, p.x, mask, NULL);
        ck_assert(all_finite(r.y, (size_t)T * d));
        ck_assert(all_finite(r.attn, (size_t)T * T));
        for (int t = 0; t < T; t++)
            for (int j = 0; j < T; j++) {
                float w = r.attn[t * T + j];
                float want = flip ? 0.0f
                           : sign[j] != sign[t] ? 0.0f
                           : 1.0f / (float)(sign[t] > 0 ? same : T - same);
                ck_assert_msg(fabsf(w - want) <= 1e-6f,
                              "flip %d: w[%d][%d] = %g, want %g", flip, t, j,
                              (double)w, (double)want);
            }
        for (int t = 0; t < T; t++)
            for (size_t c = 0; c < d; c++) {
                float want = flip ? 0.0f : (float)sign[t] * a;
                ck_assert_msg(fabsf(r.y[t * d + c] - want) <=
                              fabsf(want) * 1e-6f, "flip %d y[%d] = %g",
                              flip, t, (double)r.y[t * d + c]);
            }
        run_free(&r);
        free(mask);
        problem_free(&p);
    }
}
END_TEST

START_TEST(equal_logits_give_uniform_weights)
{
    if (!use_isa(_i))
        return;
    int T = 70, B = 1, D = 6, H = 2;
    size_t d = (size_t)D;
    for (int causal = 0; causal <= 1; causal++) {
        rng rg = { 17 };
        problem p;
        problem_make(&p, &rg, B, T, D, H, causal, 1, MASK_NONE);
        for (int t = 1; t < T; t++)   // every token the same
            memcpy(p.x + t * d, p.x, d * sizeof(float));
        run r = run_problem(&p, p.x, NULL, p.dy);
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                for (int j = 0; j < T; j++) {
                    float w = r.attn[((size_t)h * T + t) * T + j];
                    float want = causal && j > t ? 0.0f
                               : 1.0f / (float)(causal ? t + 1 : T);
                    ck_assert_msg(fabsf(w - want) <= want * 2e-6f,
                                  "w[%d][%d][%d] = %.9g", h, t, j, (double)w);
                }
        // every row sees the same values: rows agree to rounding
        for (int t = 1; t < T; t++)
            for (size_t c = 0; c < d; c++)
                ck_assert(fabsf(r.y[t * d + c] - r.y[c]) <=
                          1e-5f * (1.0f + fabsf(r.y[c])));
        ck_assert(all_finite(r.dx, (size_t)T * d));
        run_free(&r);
        problem_free(&p);
    }
}
END_TEST

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Subnormal inputs or weights: no NaN, correct, and not drastically slower.
START_TEST(subnormal_values)
{
    if (!use_isa(_i))
        return;
    int T = 128, B = 1, D = 64, H = 4;
    size_t d = (size_t)D, ny = (size_t)T * D;
    rng rg = { 77 };
    problem p;
    problem_make(&p, &rg, B, T, D, H, 1, 1, MASK_DEAD_ROWS);
    float *xs = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++)
        xs[i] = p.x[i] * 1e-39f;   // subnormal (FLT_MIN ~ 1.2e-38)
    ck_assert(fpclassify(xs[1]) == FP_SUBNORMAL ||
              fpclassify(xs[2]) == FP_SUBNORMAL);
    run r = run_problem(&p, xs, p.mask, p.dy);
    ref_mha m = problem_ref(&p);
    m.x = xs;
    double *ry = malloc(ny * sizeof(double));
    ref_forward(&m, ry, NULL);
    ck_assert(all_finite(r.y, ny) && all_finite(r.dx, ny));
    ck_assert(rel_err_d(r.y, ry, ny) < 1e-4);
    run_free(&r);
    // Subnormal weights: products underflow; still finite and correct.
    for (size_t i = 0; i < 3 * d * d; i++)
        p.w_qkv[i] *= 1e-38f;
    r = run_problem(&p, p.x, p.mask, p.dy);
    m.x = p.x;
    ref_forward(&m, ry, NULL);
    ck_assert(all_finite(r.y, ny) && all_finite(r.dx, ny));
    ck_assert(rel_err_d(r.y, ry, ny) < 1e-4);
    run_free(&r);

    // Timing: median of 7 forwards with subnormal vs normal x, on one
    // thread (a spinning pool on a loaded machine is noise, not denormals).
    omp_set_num_threads(1);
    problem_free(&p);
    problem_make(&p, &rg, B, T, D, H, 1, 1, MASK_NONE);
    for (size_t i = 0; i < ny; i++)
        xs[i] = p.x[i] * 1e-39f;
    mhsa_block *blk = problem_block(&p);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    float *y = malloc(ny * sizeof(float));
    double med[2];
    mhsa_forward(blk, ws, p.x, 1, T, NULL, y, NULL);   // warm caches, pool
    for (int v = 0; v < 2; v++) {
        double t[7];
        for (int k = 0; k < 7; k++) {
            double t0 = seconds();
            for (int it = 0; it < 5; it++)
                mhsa_forward(blk, ws, v ? xs : p.x, 1, T, NULL, y, NULL);
            t[k] = seconds() - t0;
        }
        for (int a = 0; a < 7; a++)   // insertion sort, take the middle
            for (int b = a; b > 0 && t[b] < t[b - 1]; b--) {
                double tmp = t[b];
                t[b] = t[b - 1];
                t[b - 1] = tmp;
            }
        med[v] = t[3];
    }
    printf("subnormal x on %s: %.3g s vs %.3g s normal (x%.2f)\n",
           mhsa_isa_name(all_isas[_i]), med[1], med[0], med[1] / med[0]);
    // A denormal-assist storm costs 10-100x; allow noise, not that.
    ck_assert_msg(med[1] < 8.0 * med[0] + 1e-3, "subnormal slowdown x%.1f",
                  med[1] / med[0]);
    free(y);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(xs);
    free(ry);
    problem_free(&p);
}
END_TEST

// ---- shapes -----------------------------------------------------------------

static void shape_case(int B, int T, int D, int H, int causal, int seed)
{
    rng rg = { (uint64_t)seed };
    problem p;
    problem_make(&p, &rg, B, T, D, H, causal, seed & 1, MASK_RANDOM);
    size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
    size_t d = (size_t)D;
    run r = run_problem(&p, p.x, p.mask, p.dy);
    ref_mha m = problem_ref(&p);
    double *ry = malloc(ny * sizeof(double)), *ra = malloc(na * sizeof(double));
    double *rdx = malloc(ny * sizeof(double));
    double *rgq = malloc(3 * d * d * sizeof(double));
    ref_forward(&m, ry, ra);
    ref_backward(&m, p.dy, rdx, rgq, NULL, NULL, NULL);
    double e[4] = { rel_err_d(r.y, ry, ny), rel_err_d(r.attn, ra, na),
                    rel_err_d(r.dx, rdx, ny),
                    rel_err_d(r.g->w_qkv, rgq, 3 * d * d) };
    ck_assert_msg(e[0] < 1e-4 && e[1] < 1e-4 && e[2] < 1e-4 && e[3] < 1e-4,
                  "%s B=%d T=%d D=%d H=%d causal=%d: y %.3g attn %.3g dx %.3g"
                  " dWqkv %.3g", mhsa_isa_name(mhsa_active_isa()), B, T, D,
                  H, causal, e[0], e[1], e[2], e[3]);
    run_free(&r);
    free(ry);
    free(ra);
    free(rdx);
    free(rgq);
    problem_free(&p);
}

START_TEST(edge_shapes_match_reference)
{
    if (!use_isa(_i))
        return;
    const mhsa_kernels *k = mhsa__kernels();
    int bc = (int)mhsa__attn_bc(k), br = (int)mhsa__attn_br(k);
    int nr = k->nr, mr = k->mr;
    int ts[] = { 1, 2, 3, 7, br - 1, br, br + 1, bc - 1, bc, bc + 1,
                 2 * bc + 1, 113, 127, 129 };
    int dhs[] = { 1, 2, 3, 7, nr - 1, nr, nr + 1, mr + 1, 2 * nr + 1, 113,
                  127, 129 };
    int seed = 1;
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        shape_case(1, ts[i], 10, 2, (int)(i & 1), seed++);
    for (size_t i = 0; i < sizeof dhs / sizeof *dhs; i++)
        shape_case(1, 19, dhs[i], 1, (int)(i & 1), seed++);
    shape_case(2, 33, 12, 1, 1, seed++);    // H = 1
    shape_case(2, 33, 12, 12, 0, seed++);   // H = D, dh = 1
    shape_case(1, 9, 258, 2, 1, seed++);    // dh = 129 with H = 2
}
END_TEST

// B at the workspace's maximum works; one more is refused untouched.
START_TEST(batch_at_workspace_max)
{
    mhsa_config cfg = { 8, 2, 5, 1, 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(blk, 1), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(blk, 3, &ws), MHSA_OK);
    size_t n = 4 * 5 * 8;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    rng rg = { 2 };
    fill_uniform(&rg, x, n, -1, 1);
    fill_nan(y, n);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 3, 5, NULL, y, NULL), MHSA_OK);
    ck_assert(all_finite(y, 3 * 5 * 8));
    float *y2 = malloc(n * sizeof(float));
    memcpy(y2, y, n * sizeof(float));
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 4, 5, NULL, y, NULL),
                     MHSA_ERR_SHAPE);
    ck_assert(!memcmp(y, y2, n * sizeof(float)));
    free(x);
    free(y);
    free(y2);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}
END_TEST

// Sizes whose byte counts overflow size_t fail before any allocation.
START_TEST(size_overflow_fails_before_allocating)
{
    mhsa_config big = { INT_MAX, 1, 8, 1, 1 }, ok = { 8, 2, INT_MAX, 1, 1 };
    mhsa_block *blk = NULL, *b2 = NULL;
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_block_create(&big, &blk), MHSA_ERR_NO_MEMORY);
    ck_assert_ptr_null(blk);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);   // 12 D^2 bytes wrap
    ck_assert_int_eq(mhsa_block_create(&ok, &b2), MHSA_OK);
    mhsa__alloc_fail_at(0);
    mhsa_workspace *ws = (mhsa_workspace *)&ok;
    ck_assert_int_eq(mhsa_workspace_create(b2, INT_MAX, &ws),
                     MHSA_ERR_NO_MEMORY);
    ck_assert_ptr_eq(ws, (mhsa_workspace *)&ok);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    mhsa_kv_cache *c = (mhsa_kv_cache *)&ok;
    ck_assert_int_eq(mhsa_kv_cache_create(b2, INT_MAX, INT_MAX, &c),
                     MHSA_ERR_NO_MEMORY);
    ck_assert_ptr_eq(c, (mhsa_kv_cache *)&ok);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    mhsa_block_destroy(b2);
}
END_TEST

// ---- guard pages --------------------------------------------------------------

// Copies n floats into a fresh guarded buffer and makes it read-only.
static float *guarded_input(const float *src, size_t n, guard_side side)
{
    return guard_copy(n, side, src, 1);
}

// Every entry point with every caller buffer against a guard page (inputs
// also read-only), results equal to those with ordinary buffers.
START_TEST(guard_pages_every_entry_point)
{
    if (!use_isa(_i / 2))
        return;
    guard_side side = _i % 2 ? GUARD_BEFORE : GUARD_AFTER;
    int B = 2, T = 13, D = 12, H = 3;
    size_t d = (size_t)D, ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
    for (int causal = 0; causal <= 1; causal++) {
        rng rg = { 11 };
        problem p;
        problem_make(&p, &rg, B, T, D, H, causal, 1, MASK_RANDOM);
        run ref = run_problem(&p, p.x, p.mask, p.dy);
        // weights in, through read-only guarded buffers
        float *w_qkv = guarded_input(p.w_qkv, 3 * d * d, side);
        float *b_qkv = guarded_input(p.b_qkv, 3 * d, side);
        float *w_out = guarded_input(p.w_out, d * d, side);
        float *b_out = guarded_input(p.b_out, d, side);
        mhsa_block *blk = NULL;
        ck_assert_int_eq(mhsa_block_create(&p.cfg, &blk), MHSA_OK);
        ck_assert_int_eq(mhsa_block_set_weights(blk, w_qkv, b_qkv, w_out,
                                                b_out), MHSA_OK);
        // weights out
        float *o[4] = { guard_alloc(3 * d * d, side), guard_alloc(3 * d, side),
                        guard_alloc(d * d, side), guard_alloc(d, side) };
        ck_assert_int_eq(mhsa_block_get_weights(blk, o[0], o[1], o[2], o[3]),
                         MHSA_OK);
        ck_assert(!memcmp(o[0], p.w_qkv, 3 * d * d * sizeof(float)));
        ck_assert(!memcmp(o[3], p.b_out, d * sizeof(float)));
        // forward + backward
        float *x = guarded_input(p.x, ny, side);
        float *mask = guarded_input(p.mask, (size_t)T * T, side);
        float *dy = guarded_input(p.dy, ny, side);
        float *y = guard_alloc(ny, side), *attn = guard_alloc(na, side);
        float *dx = guard_alloc(ny, side);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(blk, ws, x, B, T, mask, y, attn),
                         MHSA_OK);
        ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx, g), MHSA_OK);
        ck_assert(!memcmp(y, ref.y, ny * sizeof(float)));
        ck_assert(!memcmp(attn, ref.attn, na * sizeof(float)));
        ck_assert(!memcmp(dx, ref.dx, ny * sizeof(float)));
        ck_assert(!memcmp(g->w_qkv, ref.g->w_qkv, 3 * d * d * sizeof(float)));
        if (causal) {   // decode token by token, each token's own buffers
            run plain = run_problem(&p, p.x, NULL, NULL);   // no mask
            mhsa_kv_cache *c = NULL;
            ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, T, &c), MHSA_OK);
            for (int t = 0; t < T; t++) {
                float *xt = guarded_input(p.x + t * d, d, side);
                float *yt = guard_alloc(d, side);
                ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xt, 1, 1,
                                                     yt), MHSA_OK);
                ck_assert(rel_err(yt, plain.y + t * d, d) < 1e-5);
                guard_free(xt);
                guard_free(yt);
            }
            mhsa_kv_cache_destroy(c);
            run_free(&plain);
        }
        for (int i = 0; i < 4; i++)
            guard_free(o[i]);
        float *bufs[] = { w_qkv, b_qkv, w_out, b_out, x, mask, dy, y, attn,
                          dx };
        for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
            guard_free(bufs[i]);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        run_free(&ref);
        problem_free(&p);
    }
    // No bias: NULL biases, unaligned D.
    mhsa_config cfg = { 5, 5, 7, 1, 0 };
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    float *wq = guard_alloc(75, side), *wo = guard_alloc(25, side);
    rng rg = { 4 };
    fill_uniform(&rg, wq, 75, -1, 1);
    fill_uniform(&rg, wo, 25, -1, 1);
    guard_readonly(wq);
    guard_readonly(wo);
    ck_assert_int_eq(mhsa_block_set_weights(blk, wq, NULL, wo, NULL), MHSA_OK);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    float *x = guard_alloc(35, side), *y = guard_alloc(35, side);
    fill_uniform(&rg, x, 35, -1, 1);
    guard_readonly(x);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 1, 7, NULL, y, NULL), MHSA_OK);
    ck_assert(all_finite(y, 35));
    guard_free(wq);
    guard_free(wo);
    guard_free(x);
    guard_free(y);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}
END_TEST

// ---- floating-point control state ---------------------------------------------

// The control part of the FP state: rounding mode plus FTZ/DAZ (x86 MXCSR
// without its sticky flag bits; AArch64 FPCR).
static unsigned long fp_control(void)
{
    unsigned long c = (unsigned long)fegetround();
#if defined(__x86_64__) || defined(__i386__)
    c = c << 16 | (_mm_getcsr() & ~0x3fu);
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    c = c << 32 | fpcr;
#endif
    return c;
}

static void set_flush_to_zero(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040);   // FTZ | DAZ
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= 1ul << 24;   // FZ
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

// valgrind ignores writes of FTZ/DAZ to MXCSR (and reads back the
// default), so the FP-state tests cannot judge anything under it.

static const int round_modes[] = {
    FE_TONEAREST,
#ifdef FE_UPWARD
    FE_UPWARD,
#endif
#ifdef FE_DOWNWARD
    FE_DOWNWARD,
#endif
#ifdef FE_TOWARDZERO
    FE_TOWARDZERO,
#endif
};

// Every call leaves the caller's rounding mode and FTZ/DAZ as they were, and
// under any of them the results keep the contract (finite, exact zeros for
// fully masked rows, close to the reference, decode works).
START_TEST(fp_control_state_is_restored)
{
    if (!use_isa(_i / 2))
        return;
    if (under_valgrind()) {
        printf("skip fp_control_state_is_restored: valgrind does not emulate MXCSR FTZ/DAZ\n");
        return;
    }
    int ftz = _i % 2;
    int B = 1, T = 70, D = 16, H = 2;
    size_t ny = (size_t)B * T * D, d = (size_t)D;
    rng rg = { 61 };
    problem p;
    problem_make(&p, &rg, B, T, D, H, 1, 1, MASK_DEAD_ROWS);
    ref_mha m = problem_ref(&p);
    double *ry = malloc(ny * sizeof(double));
    ref_forward(&m, ry, NULL);
    float *y = malloc(ny * sizeof(float)), *dx = malloc(ny * sizeof(float));
    for (size_t rm = 0; rm < sizeof round_modes / sizeof *round_modes;
         rm++) {
        ck_assert_int_eq(fesetround(round_modes[rm]), 0);
        if (ftz)
            set_flush_to_zero();
        unsigned long before = fp_control();
        mhsa_block *blk = problem_block(&p);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        mhsa_kv_cache *c = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x, B, T, p.mask, y, NULL),
                         MHSA_OK);
        ck_assert(fp_control() == before);
        ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx, g), MHSA_OK);
        ck_assert(fp_control() == before);
        ck_assert(all_finite(y, ny) && all_finite(dx, ny));
        double e = rel_err_d(y, ry, ny);
        ck_assert_msg(e < 1e-4, "round mode %zu ftz %d: y err %.3g", rm, ftz,
                      e);
        for (int t = 0; t < T; t += 3)   // MASK_DEAD_ROWS: every third row
            ck_assert(!memcmp(y + t * d, p.b_out, d * sizeof(float)));
        ck_assert_int_eq(mhsa_kv_cache_create(blk, B, T, &c), MHSA_OK);
        ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, p.x, B, 5, y),
                         MHSA_OK);
        ck_assert(fp_control() == before);
        ck_assert(all_finite(y, 5 * d));
        mhsa_kv_cache_destroy(c);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
        ck_assert(fp_control() == before);
        fesetround(FE_TONEAREST);
    }
    free(y);
    free(dx);
    free(ry);
    problem_free(&p);
}
END_TEST

// Under a caller's non-default rounding mode or FTZ/DAZ the results still
// do not depend on the number of OpenMP threads.
START_TEST(fp_state_does_not_break_thread_determinism)
{
    if (!use_isa(_i / 2))
        return;
    if (under_valgrind()) {
        printf("skip fp_state_does_not_break_thread_determinism: valgrind does not emulate MXCSR FTZ/DAZ\n");
        return;
    }
    int ftz = _i % 2;
    int B = 2, T = 150, D = 32, H = 4;
    size_t ny = (size_t)B * T * D;
    rng rg = { 62 };
    problem p;
    problem_make(&p, &rg, B, T, D, H, 0, 1, MASK_RANDOM);
    for (size_t i = 0; i < ny; i += 7)   // some subnormal inputs
        p.x[i] *= 1e-39f;
    float *y[2], *dx[2];
    // OpenMP workers copy the FP state of the thread that starts them: start
    // the pool under the default state, then change the caller's.
    omp_set_num_threads(2);
    run warm = run_problem(&p, p.x, p.mask, p.dy);
    run_free(&warm);
#ifdef FE_UPWARD
    ck_assert_int_eq(fesetround(FE_UPWARD), 0);
#endif
    if (ftz)
        set_flush_to_zero();
    for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        mhsa_block *blk = problem_block(&p);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        y[nt - 1] = malloc(ny * sizeof(float));
        dx[nt - 1] = malloc(ny * sizeof(float));
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x, B, T, p.mask, y[nt - 1],
                                      NULL), MHSA_OK);
        ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx[nt - 1], g),
                         MHSA_OK);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
    }
    fesetround(FE_TONEAREST);
    ck_assert_msg(!memcmp(y[0], y[1], ny * sizeof(float)),
                  "ftz %d: y differs between 1 and 2 threads", ftz);
    ck_assert_msg(!memcmp(dx[0], dx[1], ny * sizeof(float)),
                  "ftz %d: dx differs between 1 and 2 threads", ftz);
    for (int i = 0; i < 2; i++) {
        free(y[i]);
        free(dx[i]);
    }
    problem_free(&p);
}
END_TEST

// Tagged "slow": over a minute each under valgrind (1.2 to 4 s natively).
int main(void)
{
    Suite *s = suite_create("adversarial");
    ADD_CASE(s, masked_rows_give_exact_zeros, N_ISAS, "slow");
    ADD_CASE(s, random_block_masks_match_reference, N_ISAS, NULL);
    ADD_CASE(s, nonfinite_blocked_token_reaches_nothing, N_ISAS, "slow");
    ADD_CASE(s, nonfinite_read_values_propagate, N_ISAS, NULL);
    ADD_CASE(s, nonfinite_token_propagates_in_decode, N_ISAS, NULL);
    ADD_CASE(s, huge_scores_stay_finite, N_ISAS, NULL);
    ADD_CASE(s, flt_max_mask_plus_negative_score, N_ISAS, NULL);
    ADD_CASE(s, equal_logits_give_uniform_weights, N_ISAS, NULL);
    ADD_CASE(s, subnormal_values, N_ISAS, NULL);
    ADD_CASE(s, edge_shapes_match_reference, N_ISAS, "slow");
    ADD_CASE(s, batch_at_workspace_max, 1, NULL);
    ADD_CASE(s, size_overflow_fails_before_allocating, 1, NULL);
    ADD_CASE(s, guard_pages_every_entry_point, 2 * N_ISAS, NULL);
    ADD_CASE(s, fp_control_state_is_restored, 2 * N_ISAS, NULL);
    ADD_CASE(s, fp_state_does_not_break_thread_determinism, 2 * N_ISAS,
             NULL);
    return run_suite(s);
}
