// test_ragged.c — ragged batches (API.md "Ragged batches"): key
// padding in mhsa_forward_ex and the backward after it, per-sequence cache
// lengths in mhsa_forward_cached_ex, slot reset, against PyTorch references
// (tests/data/refs_variants) on every ISA at 1 and 2 threads; every sequence
// against its solo run and independent of the others; invalid arguments.
//
// Test cases (run one alone: test_ragged NAME...):
//   seq_len        mhsa_forward_ex: key padding, forward and backward
//   ragged_decode  mhsa_forward_cached_ex with per-sequence lengths
//   ragged_reset   mhsa_kv_cache_reset_seq in the middle of a run
//   ragged_errors  every invalid seq_len, n_new, slot, overflow
// (Some cases also use GQA, RoPE and windows.)
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrun.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const seq_len_cases[] = {
    "pad_fwd_3x15x16x2_nc",        "pad_fwd_win_3x20x16x2",
    "pad_fwd_mask_rope_2x19x16x2", "pad_bwd_3x17x16x2_nc_mask",
    "pad_bwd_win_2x20x16x4",
};
static const char *const ragged_cases[] = {
    "ragged_dec_4x40x16x2", "ragged_dec_rope_gqa_win_3x45x16x4",
};

START_TEST(seq_len_case)
{
    run_case_threads(seq_len_cases[_i / N_ISAS], _i % N_ISAS);
}
END_TEST

START_TEST(ragged_case)
{
    run_case_threads(ragged_cases[_i / N_ISAS], _i % N_ISAS);
}
END_TEST

// seq_len == NULL is mhsa_forward exactly: the same y and attn bits, and
// the backward after it the same gradients.
static void forward_ex_null(const char *name)
{
    refcase rc;
    rc_load(name, &rc);
    mhsa_block *blk = rc_block(&rc);
    size_t ny = (size_t)rc.B * rc.T * rc.D, D = (size_t)rc.D;
    size_t na = (size_t)rc.B * rc.H * rc.T * rc.T, nw = rc_qkv_rows(&rc) * D;
    const float *x = refcase_get(&rc, "x"), *mask = refcase_get(&rc, "mask");
    const float *dy = refcase_get(&rc, "dy");
    float *y[2], *a[2], *dx[2], *gw[2];
    for (int k = 0; k < 2; k++) {
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, rc.B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        y[k] = malloc(ny * 4);
        a[k] = malloc(na * 4);
        dx[k] = malloc(ny * 4);
        gw[k] = malloc(nw * 4);
        if (k) {
            mhsa_forward_args args = { x, rc.B, rc.T, mask, NULL, y[k], a[k] };
            ck_assert_int_eq(mhsa_forward_ex(blk, ws, &args), MHSA_OK);
        } else {
            ck_assert_int_eq(mhsa_forward(blk, ws, x, rc.B, rc.T, mask, y[k],
                                          a[k]), MHSA_OK);
        }
        if (dy) {
            ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx[k], g), MHSA_OK);
            memcpy(gw[k], g->w_qkv, nw * 4);
        }
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
    }
    ck_assert_msg(!memcmp(y[0], y[1], ny * 4), "%s: y", name);
    ck_assert_msg(!memcmp(a[0], a[1], na * 4), "%s: attn", name);
    if (dy) {
        ck_assert_msg(!memcmp(dx[0], dx[1], ny * 4), "%s: dx", name);
        ck_assert_msg(!memcmp(gw[0], gw[1], nw * 4), "%s: g_w_qkv", name);
    }
    for (int k = 0; k < 2; k++) {
        free(y[k]);
        free(a[k]);
        free(dx[k]);
        free(gw[k]);
    }
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}

START_TEST(forward_ex_without_seq_len_is_forward)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    forward_ex_null("base_fwd_2x13x32x4");
    forward_ex_null("base_bwd_2x13x16x2_nobias");
}
END_TEST

// Every key padded but the first: each row sees key 0 only (non-causal),
// or, causal with a window of 2, padded rows past position 1 see nothing
// and get a zero context; no NaN anywhere, also in the backward.
START_TEST(fully_padded_edges)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    for (int causal = 0; causal < 2; causal++) {
        int B = 2, T = 9, D = 16, H = 2;
        mhsa_config c = { D, H, T, causal, 1 };
        c.window = causal ? 2 : 0;
        mhsa_block *blk = NULL;
        ck_assert_int_eq(mhsa_block_create(&c, &blk), MHSA_OK);
        ck_assert_int_eq(mhsa_block_init_random(blk, 5), MHSA_OK);
        size_t n = (size_t)B * T * D, na = (size_t)B * H * T * T;
        float *x = malloc(n * 4), *y = malloc(n * 4), *a = malloc(na * 4);
        float *dy = malloc(n * 4), *dx = malloc(n * 4);
        rng r = { 9 };
        fill_uniform(&r, x, n, -1, 1);
        fill_uniform(&r, dy, n, -1, 1);
        int sl[2] = { 1, 1 };
        mhsa_workspace *ws = NULL;
        mhsa_grads *g = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
        mhsa_forward_args args = { x, B, T, NULL, sl, y, a };
        ck_assert_int_eq(mhsa_forward_ex(blk, ws, &args), MHSA_OK);
        ck_assert(all_finite(y, n) && all_finite(a, na));
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < T; t++) {
                    const float *row = a + (((size_t)b * H + h) * T + t) * T;
                    int sees = !causal || t < 2, others = 1;
                    for (int j = 1; j < T; j++)
                        others &= row[j] == 0.0f;
                    ck_assert_msg(row[0] == (sees ? 1.0f : 0.0f) && others,
                                  "causal %d b %d h %d t %d: weight of key "
                                  "0 is %g, others %s", causal, b, h, t,
                                  row[0], others ? "0" : "not 0");
                }
        ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx, g), MHSA_OK);
        ck_assert(all_finite(dx, n));
        ck_assert(all_finite(g->w_qkv, 3 * (size_t)D * D));
        ck_assert(all_finite(g->b_qkv, 3 * (size_t)D));
        free(x); free(y); free(a); free(dy); free(dx);
        mhsa_grads_destroy(g);
        mhsa_workspace_destroy(ws);
        mhsa_block_destroy(blk);
    }
}
END_TEST

// ---- reset of one slot ------------------------------------------------------------

// Token by token over ragged_dec_4x40x16x2 (lengths 40, 17, 1, 29). At
// step `at`, slot 1 is reset and from then on holds sequence 3 from its
// start (a new request), in chunks of 7 then 1; the other slots go on.
// Returns slot 1's rows of sequence 3 in y3 (T, D), and checks the other
// slots against the reference.
static void reset_run(const refcase *rc, const mhsa_block *blk, int at,
                      float *y3)
{
    size_t D = (size_t)rc->D, T = (size_t)rc->T;
    int B = rc->B;
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    mhsa_kv_cache *c = rc_cache(rc, blk, B);
    const float *x = refcase_get(rc, "x"), *yref = refcase_get(rc, "y");
    float *xin = malloc((size_t)B * 7 * D * 4), *yo = malloc((size_t)B * 7 * D * 4);
    float *yall = calloc((size_t)B * T * D, 4);
    // src[b]: which sequence slot b is feeding; pos[b]: how far
    int src[4] = { 0, 1, 2, 3 }, pos[4] = { 0 }, len[4], calls1 = 0;
    for (int b = 0; b < B; b++)
        len[b] = rc->seq_len[b];
    for (int step = 0;; step++) {
        if (step == at && at >= 0) {
            ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 1), MHSA_OK);
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 0);
            for (int b = 0; b < B; b++)
                if (b != 1)
                    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, b), pos[b]);
            src[1] = 3;
            pos[1] = 0;
            len[1] = rc->seq_len[3];
        }
        int n_new[4], t_new = 0;
        for (int b = 0; b < B; b++) {
            int n = b == 1 && src[1] == 3 ? (calls1 % 2 ? 1 : 7) : 1;
            n_new[b] = n < len[b] - pos[b] ? n : len[b] - pos[b];
            if (n_new[b] > t_new)
                t_new = n_new[b];
        }
        if (!t_new)
            break;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < t_new; t++)
                for (size_t d = 0; d < D; d++)
                    xin[((size_t)b * t_new + t) * D + d] = t < n_new[b]
                        ? x[((size_t)src[b] * T + pos[b] + t) * D + d] : 0.0f;
        mhsa_cached_args a = { xin, B, t_new, n_new, yo };
        ck_assert_msg(mhsa_forward_cached_ex(blk, ws, c, &a) == MHSA_OK,
                      "step %d: %s", step, mhsa_last_error());
        for (int b = 0; b < B; b++) {
            if (b != 1 || src[1] != 3)
                memcpy(yall + ((size_t)src[b] * T + pos[b]) * D,
                       yo + (size_t)b * t_new * D, (size_t)n_new[b] * D * 4);
            else {
                memcpy(y3 + (size_t)pos[b] * D, yo + (size_t)b * t_new * D,
                       (size_t)n_new[b] * D * 4);
                calls1 += n_new[b] > 0;
            }
            pos[b] += n_new[b];
        }
    }
    // sequences 0, 2, 3 (slot 3) and 3 again (slot 1) against PyTorch;
    // sequence 1 was cut short at the reset
    for (int s = 0; s < B; s++) {
        if (s == 1 && at >= 0)
            continue;
        char what[32];
        snprintf(what, sizeof what, "reset@%d seq %d", at, s);
        rc_expect(rc, what, yall + (size_t)s * T * D, yref + (size_t)s * T * D,
                  T * D);
    }
    if (at >= 0) {
        char what[32];
        snprintf(what, sizeof what, "reset@%d slot 1", at);
        rc_expect(rc, what, y3, yref + 3 * T * D, (size_t)len[1] * D);
    }
    free(xin);
    free(yo);
    free(yall);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
}

// A reset slot is a fresh one: slot 1 then gives the same bits as slot 1
// of a fresh cache fed sequence 3 the same way from the first call.
START_TEST(reset_seq_mid_run_is_fresh)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    refcase rc;
    rc_load("ragged_dec_4x40x16x2", &rc);
    mhsa_block *blk = rc_block(&rc);
    size_t TD = (size_t)rc.T * rc.D, n3 = (size_t)rc.seq_len[3] * rc.D;
    float *y_reset = calloc(TD, 4), *y_fresh = calloc(TD, 4);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(refrun_threads = threads);
        reset_run(&rc, blk, 10, y_reset);   // slot 1 had 10 tokens
        reset_run(&rc, blk, 0, y_fresh);    // reset before anything
        ck_assert_msg(!memcmp(y_reset, y_fresh, n3 * 4),
                      "[%s, %d threads] slot 1 after reset_seq differs from "
                      "a fresh slot", mhsa_isa_name(all_isas[_i]), threads);
    }
    // and a cache whose slot was never used (no reset at all)
    {
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, 2, &ws), MHSA_OK);
        mhsa_kv_cache *c = rc_cache(&rc, blk, 2);
        const float *x = refcase_get(&rc, "x");
        float *xin = calloc(2 * 7 * (size_t)rc.D, 4);
        float *yo = malloc(2 * 7 * (size_t)rc.D * 4);
        float *y1 = calloc(TD, 4);
        int pos = 0, k = 0;
        while (pos < rc.seq_len[3]) {
            int n = k++ % 2 ? 1 : 7;
            if (n > rc.seq_len[3] - pos)
                n = rc.seq_len[3] - pos;
            int n_new[2] = { 0, n };
            memcpy(xin + (size_t)n * rc.D, x + (3 * TD + (size_t)pos * rc.D),
                   (size_t)n * rc.D * 4);
            mhsa_cached_args a = { xin, 2, n, n_new, yo };
            ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &a), MHSA_OK);
            memcpy(y1 + (size_t)pos * rc.D, yo + (size_t)n * rc.D,
                   (size_t)n * rc.D * 4);
            pos += n;
        }
        rc_expect(&rc, "never-used slot 1", y1, refcase_get(&rc, "y") + 3 * TD,
                  n3);
        free(xin);
        free(yo);
        free(y1);
        mhsa_kv_cache_destroy(c);
        mhsa_workspace_destroy(ws);
    }
    free(y_reset);
    free(y_fresh);
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}
END_TEST

// ---- invalid arguments ---------------------------------------------------------------

// Whether msg names sequence b: "[b]", "b=b", "b = b", "sequence b", ...
static int names_index(const char *msg, int b)
{
    static const char *const fmts[] = { "[%d]", "b=%d", "b = %d",
                                        "sequence %d", "seq %d", "slot %d",
                                        "b %d" };
    char s[32];
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        snprintf(s, sizeof s, fmts[i], b);
        if (strstr(msg, s))
            return 1;
    }
    return 0;
}

static void expect_msg(const char *what, const char *must1, int b,
                       const char *value)
{
    const char *msg = mhsa_last_error();
    printf("%s: %s\n", what, msg);
    ck_assert_msg((!must1 || strstr(msg, must1)) && (b < 0 || names_index(msg, b))
                  && (!value || strstr(msg, value)),
                  "%s: message \"%s\" should name %s%s sequence %d and the "
                  "value %s", what, msg, must1 ? must1 : "", must1 ? "," : "",
                  b, value ? value : "-");
}

static int all_equal(const float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&p[i], &v, sizeof v))
            return 0;
    return 1;
}

START_TEST(invalid_seq_len)
{
    refcase rc;
    rc_load("pad_bwd_3x17x16x2_nc_mask", &rc);   // B 3, T 17
    mhsa_block *blk = rc_block(&rc);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g0 = NULL, *g1 = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc.B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g0), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g1), MHSA_OK);
    size_t ny = (size_t)rc.B * rc.T * rc.D, na = ny / rc.D * rc.H * rc.T;
    size_t nw = rc_qkv_rows(&rc) * rc.D;
    const float *x = refcase_get(&rc, "x"), *m = refcase_get(&rc, "mask");
    const float *dy = refcase_get(&rc, "dy");
    float *y = malloc(ny * 4), *a = malloc(na * 4), *dx0 = malloc(ny * 4),
          *dx1 = malloc(ny * 4);
    // a good forward and its backward
    mhsa_forward_args good = { x, rc.B, rc.T, m, rc.seq_len, y, NULL };
    ck_assert_int_eq(mhsa_forward_ex(blk, ws, &good), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx0, g0), MHSA_OK);
    static const struct { int b, v; const char *text; } bad[] = {
        { 2, 18, "18" }, { 1, 0, "0" }, { 0, -3, "-3" }, { 2, INT32_MIN,
        "-2147483648" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int sl[3] = { 17, 6, 1 };
        sl[bad[i].b] = bad[i].v;
        for (size_t k = 0; k < ny; k++)
            y[k] = 7.0f;
        for (size_t k = 0; k < na; k++)
            a[k] = 7.0f;
        mhsa_forward_args args = { x, rc.B, rc.T, m, sl, y, a };
        mhsa_status s = mhsa_forward_ex(blk, ws, &args);
        ck_assert_msg(s == MHSA_ERR_INVALID_ARG, "seq_len[%d] = %d: %s",
                      bad[i].b, bad[i].v, mhsa_status_str(s));
        expect_msg("seq_len", "seq_len", bad[i].b, bad[i].text);
        ck_assert_msg(all_equal(y, ny, 7.0f) && all_equal(a, na, 7.0f),
                      "seq_len[%d] = %d: y or attn written", bad[i].b,
                      bad[i].v);
    }
    mhsa_forward_args null_x = good;
    null_x.x = NULL;
    ck_assert_int_eq(mhsa_forward_ex(blk, ws, &null_x), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_forward_ex(blk, ws, NULL), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_forward_ex(NULL, ws, &good), MHSA_ERR_INVALID_ARG);
    // the failed calls left the recorded forward alone
    ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx1, g1), MHSA_OK);
    ck_assert_msg(!memcmp(dx0, dx1, ny * 4) &&
                  !memcmp(g0->w_qkv, g1->w_qkv, nw * 4),
                  "a failed mhsa_forward_ex changed the recorded forward");
    free(y); free(a); free(dx0); free(dx1);
    mhsa_grads_destroy(g0);
    mhsa_grads_destroy(g1);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}
END_TEST

// A failed mhsa_forward_cached_ex changes nothing: the lengths, and the
// contents (the run continued afterwards gives the same bits as one that
// never made the failed call).
START_TEST(invalid_n_new_and_overflow)
{
    refcase rc;
    rc_load("ragged_dec_4x40x16x2", &rc);
    mhsa_block *blk = rc_block(&rc);
    size_t D = (size_t)rc.D, T = (size_t)rc.T;
    const float *x = refcase_get(&rc, "x");
    float *xin = malloc(4 * T * D * 4), *yo = malloc(4 * T * D * 4);
    float *yr[2];
    for (int pass = 0; pass < 2; pass++) {
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, 4, &ws), MHSA_OK);
        mhsa_kv_cache *c = NULL;
        ck_assert_int_eq(mhsa_kv_cache_create(blk, 3, 20, &c), MHSA_OK);
        // three sequences of lengths 5, 12, 19 after one call
        int n0[3] = { 5, 12, 19 };
        for (int b = 0; b < 3; b++)
            memcpy(xin + (size_t)b * 19 * D, x + (size_t)b * T * D,
                   19 * D * 4);
        mhsa_cached_args a0 = { xin, 3, 19, n0, yo };
        ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &a0), MHSA_OK);
        if (pass == 1) {
            static const struct { int b, v; const char *text; } bad[] = {
                { 1, -1, "-1" }, { 2, 3, "3" }, { 0, INT32_MIN, "-2147483648" },
            };
            for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                int n[3] = { 1, 1, 1 };
                n[bad[i].b] = bad[i].v;
                for (size_t k = 0; k < 3 * 2 * D; k++)
                    yo[k] = 7.0f;
                mhsa_cached_args a = { xin, 3, 2, n, yo };
                mhsa_status s = mhsa_forward_cached_ex(blk, ws, c, &a);
                ck_assert_msg(s == MHSA_ERR_INVALID_ARG, "n_new[%d] = %d: %s",
                              bad[i].b, bad[i].v, mhsa_status_str(s));
                expect_msg("n_new", "n_new", bad[i].b, bad[i].text);
                ck_assert(all_equal(yo, 3 * 2 * D, 7.0f));
            }
            // sequence 2 (19 + 2 > 20) overflows; 0 and 1 would fit
            int n[3] = { 2, 2, 2 };
            mhsa_cached_args a = { xin, 3, 2, n, yo };
            ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &a),
                             MHSA_ERR_SHAPE);
            expect_msg("overflow", NULL, 2, NULL);
            // B beyond the cache's max_batch
            int n4[4] = { 1, 1, 1, 1 };
            mhsa_cached_args a4 = { xin, 4, 1, n4, yo };
            ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &a4),
                             MHSA_ERR_SHAPE);
            mhsa_cached_args a5 = { xin, 3, 0, NULL, yo };
            ck_assert(mhsa_forward_cached_ex(blk, ws, c, &a5) != MHSA_OK);
            ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, NULL),
                             MHSA_ERR_INVALID_ARG);
            ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, NULL, &a),
                             MHSA_ERR_INVALID_ARG);
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 5);
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 12);
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 2), 19);
            ck_assert_int_eq(mhsa_kv_cache_len(c), 19);
        }
        // one more token for each: the same bits either way
        int n1[3] = { 1, 1, 1 };
        for (int b = 0; b < 3; b++)
            memcpy(xin + (size_t)b * D, x + ((size_t)b * T + n0[b]) * D,
                   D * 4);
        mhsa_cached_args a1 = { xin, 3, 1, n1, yo };
        ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &a1), MHSA_OK);
        yr[pass] = malloc(3 * D * 4);
        memcpy(yr[pass], yo, 3 * D * 4);
        mhsa_kv_cache_destroy(c);
        mhsa_workspace_destroy(ws);
    }
    ck_assert_msg(!memcmp(yr[0], yr[1], 3 * D * 4),
                  "a failed mhsa_forward_cached_ex changed the cache");
    free(yr[0]);
    free(yr[1]);
    free(xin);
    free(yo);
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}
END_TEST

START_TEST(invalid_slot)
{
    mhsa_config cfg = { 16, 2, 8, 1, 1 };
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create(blk, 3, 8, &c), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(NULL, 0), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, -1), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 3), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 2), 0);
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(NULL, 0), MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, -1), MHSA_ERR_INVALID_ARG);
    expect_msg("reset_seq -1", NULL, -1, "-1");
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 3), MHSA_ERR_INVALID_ARG);
    expect_msg("reset_seq 3", NULL, -1, "3");
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 2), MHSA_OK);
    mhsa_kv_cache_destroy(c);
    mhsa_block_destroy(blk);
}
END_TEST

// ---- thread counts -------------------------------------------------------------

START_TEST(threads_seq_len)
{
    thread_spec t = { "padding", { 64, 4, 292, 0, 1 }, 64, 0, 1 };
    t.cfg.causal = 0;
    check_thread_counts(&t, _i);   // non-causal: decode is not run
}
END_TEST

START_TEST(threads_ragged)
{
    thread_spec t = { "ragged, GQA, RoPE, window", { 64, 4, 362, 1, 1 }, 64,
                      0, 2 };
    t.cfg.n_kv_heads = 2;
    t.cfg.rope_dim = 8;
    t.cfg.window = 300;   // decode steps over 4 x 150+ keys: split
    check_thread_counts(&t, _i);
}
END_TEST

// ---- the suite ------------------------------------------------------------------------

static void add_seq_len(TCase *tc)
{
    tcase_add_loop_test(tc, seq_len_case, 0, N_OF(seq_len_cases) * N_ISAS);
    tcase_add_loop_test(tc, forward_ex_without_seq_len_is_forward, 0,
                        N_ISAS);
    tcase_add_loop_test(tc, fully_padded_edges, 0, N_ISAS);
    tcase_add_loop_test(tc, threads_seq_len, 0, N_ISAS);
}

static void add_ragged(TCase *tc)
{
    tcase_add_loop_test(tc, ragged_case, 0, N_OF(ragged_cases) * N_ISAS);
    tcase_add_loop_test(tc, threads_ragged, 0, N_ISAS);
}

static void add_reset(TCase *tc)
{
    tcase_add_loop_test(tc, reset_seq_mid_run_is_fresh, 0, N_ISAS);
}

static void add_errors(TCase *tc)
{
    tcase_add_test(tc, invalid_seq_len);
    tcase_add_test(tc, invalid_n_new_and_overflow);
    tcase_add_test(tc, invalid_slot);
}

int main(int argc, char **argv)
{
    static const tcase_def defs[] = {
        { "seq_len", add_seq_len },     { "ragged_decode", add_ragged },
        { "ragged_reset", add_reset },  { "ragged_errors", add_errors },
    };
    return run_tcases("ragged", defs, N_OF(defs), argc, argv);
}
