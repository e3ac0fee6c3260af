// test_overflow.c — scores that overflow fp32 to +inf from finite inputs
// (API.md "Scores that overflow"): never NaN; the row's weight is shared
// equally by its +inf keys, which is the float64 limit here, on every path
// (forward with and without weights, backward, the cached calls token by
// token and the one-row decode path), every ISA, against the double
// reference of ref.c.
//
// The problem: D = 8, H = 1, identity projections. x's first four features
// feed q and k, the last four v. Tokens 2 and 4 carry 2e19 in the first
// four: their q . k products (about 5.6e38) overflow fp32 but not float64,
// where one of them (or two equal ones: tokens 2 and 4 of sequence 0 are
// the same) outweighs every other key completely. The other tokens have
// zeros there (scores 0, uniform weights), and v, dO are small integers,
// so that the gradients of the saturated rows cancel exactly in fp32 as
// they do in float64 (a well conditioned problem: the test is of the +inf
// rule, not of cancellation).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "util.h"

enum { D = 8, T = 7, B = 2 };

typedef struct prob {
    float w_qkv[3 * D * D], b_qkv[3 * D], w_out[D * D], b_out[D];
    float x[B * T * D], dy[B * T * D];
} prob;

static void make(prob *p)
{
    memset(p, 0, sizeof *p);
    for (int part = 0; part < 3; part++)       // q, k: features 0..3;
        for (int i = 0; i < D; i++) {          // v: features 4..7 on 0..3
            int src = part < 2 ? i : (i < 4 ? i + 4 : -1);
            if (part < 2 && i >= 4)
                src = -1;
            if (src >= 0)
                p->w_qkv[(part * D + i) * D + src] = 1.0f;
        }
    for (int i = 0; i < D; i++)
        p->w_out[i * D + i] = 1.0f;
    rng r = { 99 };
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *x = p->x + ((size_t)b * T + t) * D;
            for (int d = 0; d < 4; d++)
                x[d] = (t == 2 || t == 4) ? 2e19f : 0.0f;
            for (int d = 4; d < D; d++)
                x[d] = (float)rng_int(&r, -3, 3);
            if (b == 0 && t == 4)   // row 4 shares its weight between
                memcpy(x + 4, x - 2 * D + 4, 4 * sizeof(float));  // 2 and 4
            if (b == 1 && t == 4)   // sequence 1: one +inf key for row 4
                for (int d = 0; d < 4; d++)
                    x[d] = -2e19f;
        }
    for (int i = 0; i < B * T * D; i++)
        p->dy[i] = (float)rng_int(&r, -2, 2);
}

static mhsa_block *block(const prob *p, int causal)
{
    mhsa_config cfg = { D, 1, T, causal, 1 };
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, p->w_qkv, p->b_qkv,
                                            p->w_out, p->b_out), MHSA_OK);
    return blk;
}

static int use_isa(int i)
{
    if (!kernels_or_skip(i))
        return 0;
    ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
    return 1;
}

static void close_to(const float *got, const double *want, size_t n,
                     const char *what, int causal)
{
    ck_assert_msg(all_finite(got, n), "%s %s (causal %d): not finite",
                  mhsa_isa_name(mhsa_active_isa()), what, causal);
    double e = rel_err_d(got, want, n);
    ck_assert_msg(e < 1e-5, "%s %s (causal %d): error %.3g",
                  mhsa_isa_name(mhsa_active_isa()), what, causal, e);
}

START_TEST(forward_and_backward_take_the_limit)
{
    if (!use_isa(_i))
        return;
    prob p;
    make(&p);
    for (int causal = 0; causal <= 1; causal++) {
        mhsa_block *blk = block(&p, causal);
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        size_t ny = (size_t)B * T * D, na = (size_t)B * T * T;
        float y[B * T * D], y2[B * T * D], attn[B * T * T], dx[B * T * D];
        ref_mha m = { B, T, D, 1, causal, 1, p.w_qkv, p.b_qkv, p.w_out,
                      p.b_out, p.x, NULL };
        double ry[B * T * D], ra[B * T * T], rdx[B * T * D];
        double rgq[3 * D * D], rbq[3 * D], rgo[D * D], rbo[D];
        ref_forward(&m, ry, ra);
        ref_backward(&m, p.dy, rdx, rgq, rbq, rgo, rbo);
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x, B, T, NULL, y, attn),
                         MHSA_OK);
        close_to(y, ry, ny, "y", causal);
        close_to(attn, ra, na, "attn", causal);
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x, B, T, NULL, y2, NULL),
                         MHSA_OK);
        close_to(y2, ry, ny, "y without attn", causal);
        ck_assert_int_eq(mhsa_backward(blk, ws, p.dy, dx, g), MHSA_OK);
        close_to(dx, rdx, ny, "dx", causal);
        close_to(g->w_qkv, rgq, 3 * D * D, "dw_qkv", causal);
        close_to(g->b_qkv, rbq, 3 * D, "db_qkv", causal);
        close_to(g->w_out, rgo, D * D, "dw_out", causal);
        // One sequence alone (T = 1 takes the one-row decode path).
        ck_assert_int_eq(mhsa_forward(blk, ws, p.x + 2 * D, 1, 1, NULL, y,
                                      NULL), MHSA_OK);
        ref_mha m1 = m;
        m1.B = 1;
        m1.T = 1;
        m1.x = p.x + 2 * D;
        ref_forward(&m1, ry, NULL);
        close_to(y, ry, D, "T = 1", causal);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
    }
}
END_TEST

// Token by token through the KV cache (the decode path's chunk merge sees
// the +inf chunks) and in one multi-token step (the tiled path).
START_TEST(cached_calls_take_the_limit)
{
    if (!use_isa(_i))
        return;
    prob p;
    make(&p);
    mhsa_block *blk = block(&p, 1);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    ref_mha m = { B, T, D, 1, 1, 1, p.w_qkv, p.b_qkv, p.w_out, p.b_out, p.x,
                  NULL };
    double ry[B * T * D];
    ref_forward(&m, ry, NULL);
    for (int step = 1; step <= T; step += 5) {   // 1 row, then 5 rows
        mhsa_kv_cache *c = NULL;
        ck_assert_int_eq(mhsa_kv_cache_create(blk, B, T, &c), MHSA_OK);
        float y[B * T * D], xs[B * T * D], ys[B * T * D];
        for (int t = 0; t < T; t += step) {
            int n = T - t < step ? T - t : step;
            for (int b = 0; b < B; b++)
                memcpy(xs + (size_t)b * n * D, p.x + ((size_t)b * T + t) * D,
                       (size_t)n * D * sizeof(float));
            ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xs, B, n, ys),
                             MHSA_OK);
            for (int b = 0; b < B; b++)
                memcpy(y + ((size_t)b * T + t) * D, ys + (size_t)b * n * D,
                       (size_t)n * D * sizeof(float));
        }
        close_to(y, ry, (size_t)B * T * D, step == 1 ? "decode" : "cached",
                 1);
        mhsa_kv_cache_destroy(c);
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("overflow");
    TCase *tc = tcase_create("overflow");
    tcase_add_loop_test(tc, forward_and_backward_take_the_limit, 0, N_ISAS);
    tcase_add_loop_test(tc, cached_calls_take_the_limit, 0, N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
