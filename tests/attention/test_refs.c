// test_refs.c — the attention block against PyTorch's
// nn.MultiheadAttention: every reference case in tests/data/refs/ on every
// ISA this machine has (forward y and attn, backward dx and weight
// gradients, KV-cache decode token by token and in chunks).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"
#include "refcase.h"
#include "util.h"

static const char *const cases[] = {
    "big_1x16x32x2",   "bwd_1x6x16x2",       "bwd_2x21x40x5",
    "bwd_nc_1x6x16x2", "bwd_nc_2x21x40x5",   "deadrow_1x10x16x2",
    "dec_1x25x32x4",   "fwd_1x11x36x4",      "fwd_1x5x16x2",
    "fwd_1x96x128x2",  "fwd_1x9x32x4_nobias", "fwd_2x40x64x4",
    "fwd_2x9x24x3",    "fwd_nc_2x10x32x4",   "mask_1x18x32x2",
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static void expect_close(const refcase *rc, const char *what, const float *got,
                         size_t n)
{
    const float *want = refcase_get(rc, what);
    ck_assert_msg(want, "%s: case has no tensor %s", rc->name, what);
    ck_assert_msg(all_finite(got, n), "%s [%s]: %s has NaN/inf", rc->name,
                  mhsa_isa_name(mhsa_active_isa()), what);
    double e = rel_err(got, want, n);
    printf("%-22s %-6s %-8s rel err %.2e\n", rc->name,
           mhsa_isa_name(mhsa_active_isa()), what, e);
    ck_assert_msg(e <= rc->tol, "%s [%s]: %s rel err %.3g > tol %.3g",
                  rc->name, mhsa_isa_name(mhsa_active_isa()), what, e,
                  rc->tol);
}

static mhsa_block *make_block(const refcase *rc)
{
    mhsa_config cfg = { rc->D, rc->H, rc->T, rc->causal, rc->bias };
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, refcase_get(rc, "w_qkv"),
                                            refcase_get(rc, "b_qkv"),
                                            refcase_get(rc, "w_out"),
                                            refcase_get(rc, "b_out")),
                     MHSA_OK);
    return blk;
}

static void run_forward_case(const refcase *rc)
{
    mhsa_block *blk = make_block(rc);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    size_t ny = (size_t)rc->B * rc->T * rc->D;
    size_t na = (size_t)rc->B * rc->H * rc->T * rc->T;
    float *y = alloc_guarded(ny), *attn = alloc_guarded(na);
    fill_nan(y, ny);
    fill_nan(attn, na);
    const float *x = refcase_get(rc, "x"), *mask = refcase_get(rc, "mask");
    ck_assert_int_eq(mhsa_forward(blk, ws, x, rc->B, rc->T, mask, y, attn),
                     MHSA_OK);
    expect_close(rc, "y", y, ny);
    if (refcase_get(rc, "attn"))
        expect_close(rc, "attn", attn, na);
    // Fully masked rows: exact zero weights, and y equals b_out there.
    for (int i = 0; i < rc->n_masked_rows; i++) {
        int t = rc->masked_rows[i];
        for (int b = 0; b < rc->B; b++) {
            for (int h = 0; h < rc->H; h++)
                for (int j = 0; j < rc->T; j++)
                    ck_assert(attn[(((size_t)b * rc->H + h) * rc->T + t) *
                                   rc->T + j] == 0.0f);
            const float *bo = refcase_get(rc, "b_out");
            for (int d = 0; d < rc->D; d++)
                ck_assert_float_eq_tol(y[((size_t)b * rc->T + t) * rc->D + d],
                                       bo ? bo[d] : 0.0f, 1e-6);
        }
    }
    // Without attn the output is the same, bit for bit.
    float *y2 = alloc_guarded(ny);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, rc->B, rc->T, mask, y2, NULL),
                     MHSA_OK);
    ck_assert(memcmp(y, y2, ny * sizeof(float)) == 0);
    ck_assert(guard_ok(y, ny) && guard_ok(attn, na) && guard_ok(y2, ny));
    free_guarded(y);
    free_guarded(y2);
    free_guarded(attn);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

static void run_backward_case(const refcase *rc)
{
    mhsa_block *blk = make_block(rc);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    size_t ny = (size_t)rc->B * rc->T * rc->D, D = (size_t)rc->D;
    float *y = alloc_guarded(ny), *dx = alloc_guarded(ny);
    fill_nan(dx, ny);
    const float *x = refcase_get(rc, "x"), *mask = refcase_get(rc, "mask");
    ck_assert_int_eq(mhsa_forward(blk, ws, x, rc->B, rc->T, mask, y, NULL),
                     MHSA_OK);
    expect_close(rc, "y", y, ny);
    ck_assert_int_eq(mhsa_backward(blk, ws, refcase_get(rc, "dy"), dx, g),
                     MHSA_OK);
    expect_close(rc, "dx", dx, ny);
    expect_close(rc, "g_w_qkv", g->w_qkv, 3 * D * D);
    expect_close(rc, "g_w_out", g->w_out, D * D);
    if (rc->bias) {
        expect_close(rc, "g_b_qkv", g->b_qkv, 3 * D);
        expect_close(rc, "g_b_out", g->b_out, D);
    } else {
        ck_assert_ptr_null(g->b_qkv);
        ck_assert_ptr_null(g->b_out);
    }
    ck_assert(guard_ok(y, ny) && guard_ok(dx, ny));
    free_guarded(y);
    free_guarded(dx);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

// Feeds the sequence through the KV cache in chunks of the given sizes
// (cycled) and compares every row with the reference y.
static void run_decode_chunks(const refcase *rc, const int *chunks, int nch)
{
    mhsa_block *blk = make_block(rc);
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(blk, rc->B, rc->T, &c), MHSA_OK);
    size_t D = (size_t)rc->D, T = (size_t)rc->T, B = (size_t)rc->B;
    const float *x = refcase_get(rc, "x");
    float *y = malloc(B * T * D * sizeof(float));
    float *xin = malloc(B * T * D * sizeof(float));
    float *yout = malloc(B * T * D * sizeof(float));
    size_t pos = 0;
    for (int ci = 0; pos < T; ci++) {
        size_t n = (size_t)chunks[ci % nch];
        if (n > T - pos)
            n = T - pos;
        for (size_t b = 0; b < B; b++)
            memcpy(xin + b * n * D, x + (b * T + pos) * D,
                   n * D * sizeof(float));
        ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xin, (int)B, (int)n,
                                             yout), MHSA_OK);
        for (size_t b = 0; b < B; b++)
            memcpy(y + (b * T + pos) * D, yout + b * n * D,
                   n * D * sizeof(float));
        pos += n;
        ck_assert_int_eq(mhsa_kv_cache_len(c), (int)pos);
    }
    expect_close(rc, "y", y, B * T * D);
    free(y);
    free(xin);
    free(yout);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

START_TEST(reference_case)
{
    int ci = _i / N_ISAS, ii = _i % N_ISAS;
    if (!kernels_or_skip(ii))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[ii]), MHSA_OK);
    refcase rc;
    ck_assert_msg(refcase_load(cases[ci], &rc) == 0, "cannot load %s",
                  cases[ci]);
    if (!strcmp(rc.kind, "forward")) {
        run_forward_case(&rc);
    } else if (!strcmp(rc.kind, "backward")) {
        run_backward_case(&rc);
    } else if (!strcmp(rc.kind, "decode")) {
        static const int one[] = { 1 }, five_then_ones[] = { 5, 1, 1, 1 },
                         mixed[] = { 3, 7, 2 }, whole[] = { 1 << 20 };
        run_decode_chunks(&rc, one, 1);
        run_decode_chunks(&rc, five_then_ones, 4);
        run_decode_chunks(&rc, mixed, 3);
        run_decode_chunks(&rc, whole, 1);
    } else {
        ck_abort_msg("%s: unknown kind %s", rc.name, rc.kind);
    }
    refcase_free(&rc);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("refs");
    TCase *tc = tcase_create("pytorch");
    tcase_add_loop_test(tc, reference_case, 0, N_CASES * N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
